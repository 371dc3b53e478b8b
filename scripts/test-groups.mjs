// Which test files share a test process, and when each process starts (scripts/run-tests.mjs).
//
// A test process pays for itself before its first test: node, the test runner, and for most files
// the gateway's modules and its first start (~1 s of CPU; 90 of the suite's files load them). Files
// that run short therefore share a process, a group of at most GROUP_SECONDS of their measured
// durations, files of one folder together (they load the same modules); a file that runs long runs
// alone.
//
// When: the machine has two cores, and the processes differ in how much of them they use. Some
// mostly wait (a voice call runs in real time: 47 s for 5 s of CPU), some compute most of their
// time. A fixed number of processes at a time (node --test's --test-concurrency) either left the
// cores idle while waiting processes held the slots, or ran too many computing ones at once. So a
// process starts when its share of a core (its CPU seconds over its seconds) fits beside the shares
// of those running: the longest first, and when it does not fit, the longest one that does.
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
 * and CPU seconds, longest first. Files keep their given order inside a group.
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
  return processes.sort((a, b) => b.seconds - a.seconds);
}

/** The share of a core a process keeps busy: its CPU seconds over its seconds, between 0.05 and 1. */
export const coreShare = (p) => Math.min(1, Math.max(0.05, p.cpu / Math.max(p.seconds, 0.1)));

/**
 * Which of `queue` (longest first) to start now beside `running`: the index of the first whose share
 * fits in `cores` beside theirs, or -1 to wait for one to end. With nothing running, the first.
 */
export function nextToStart(queue, running, { cores, maxProcesses }) {
  if (queue.length === 0) return -1;
  if (running.length === 0) return 0;
  if (running.length >= maxProcesses) return -1;
  const busy = running.reduce((sum, p) => sum + coreShare(p), 0);
  return queue.findIndex((p) => busy + coreShare(p) <= cores);
}
