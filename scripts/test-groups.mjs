// Which test files share a test process, and in which order the processes start (scripts/run-tests.mjs).
//
// A test process pays for itself before its first test: node, the test runner, and for most files
// the gateway's modules and its first start (~1 s of CPU; 90 of the suite's files load them). Files
// that run short therefore share a process, a group of at most GROUP_SECONDS of their measured
// durations, files of one folder together (they load the same modules); a file that runs long runs
// alone.
//
// The order: the machine has two cores, and some long files mostly wait (a voice call runs in real
// time: 47 s for 5 s of CPU). Started all at once, as longest-first would, they left the cores half
// idle for the run's first 40 s; so the processes that mostly wait and the ones that mostly compute
// start in turns, each list longest first.
//
// The durations are test/durations.json: for each file, the seconds it took run alone and the CPU
// seconds it used (its children's included), on the 2-core machine the suite is sized for
// (`npm run test:durations` measures them again). A file not listed yet counts as UNKNOWN. A
// group's files run one after another in one process, each under its own top-level suites and
// tests, as node:test runs the tests of one file: what differs is that they share the process's
// module instances and its `process` object, so a test file must leave `process.env` and global
// state as it found them, and register no hook at its top level (test/architecture.test.ts).
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** A group is full at this many seconds of its files' durations. */
const GROUP_SECONDS = 30;
/** A file missing from test/durations.json counts as this long, and as busy. */
const UNKNOWN = { seconds: 4, cpu: 4 };
/** A process that uses less CPU than this share of its seconds mostly waits. */
const WAITING_SHARE = 0.35;

/** test/durations.json (`{file: [seconds, cpuSeconds]}`), or nothing when it is missing or unreadable. */
export function readDurations(root) {
  try {
    return JSON.parse(readFileSync(join(root, 'test', 'durations.json'), 'utf8'));
  } catch {
    return {}; // every file then counts as UNKNOWN
  }
}

/**
 * The run's processes: each a list of test files (absolute paths, as given), its expected seconds
 * and CPU seconds, in the order they should start. Files keep their given order inside a group.
 */
export function planProcesses(root, files, durations) {
  const measured = (file) => {
    const d = durations[relative(root, file)];
    return d ? { seconds: d[0], cpu: d[1] } : UNKNOWN;
  };
  const processes = [];
  const open = new Map(); // folder → the group being filled
  for (const file of files) {
    const { seconds, cpu } = measured(file);
    if (seconds >= GROUP_SECONDS) {
      processes.push({ files: [file], seconds, cpu });
      continue;
    }
    const folder = dirname(file);
    let group = open.get(folder);
    if (!group || group.seconds + seconds > GROUP_SECONDS) {
      group = { files: [], seconds: 0, cpu: 0 };
      open.set(folder, group);
      processes.push(group);
    }
    group.files.push(file);
    group.seconds += seconds;
    group.cpu += cpu;
  }
  const longest = (a, b) => b.seconds - a.seconds;
  const waiting = processes.filter((p) => p.cpu < p.seconds * WAITING_SHARE).sort(longest);
  const busy = processes.filter((p) => p.cpu >= p.seconds * WAITING_SHARE).sort(longest);
  const order = [];
  while (waiting.length > 0 || busy.length > 0) {
    const [a, b] = (waiting[0]?.seconds ?? 0) >= (busy[0]?.seconds ?? 0) ? [waiting, busy] : [busy, waiting];
    if (a.length > 0) order.push(a.shift());
    if (b.length > 0) order.push(b.shift());
  }
  return order;
}
