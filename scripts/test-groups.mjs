// Which test files share a test process, and in which order the processes start (scripts/run-tests.mjs).
//
// A test process pays for itself before its first test: node, the test runner, and for most files
// the gateway's modules and its first start (~1 s of CPU; 90 of the suite's files load them). Files
// that run short therefore share a process, a group of at most GROUP_SECONDS of their measured
// durations, files of one folder together (they load the same modules); a file that runs long runs
// alone. The processes start longest first, so no long one starts last and holds the run open.
//
// The durations are test/durations.json: the seconds each file took run alone, on the 2-core
// machine the suite is sized for (`npm run test:durations` measures them again). A file not listed
// yet counts as UNKNOWN_SECONDS. A group's files run one after another in one process, each under
// its own top-level suites and tests, as node:test runs the tests of one file: what differs is that
// they share the process's module instances and its `process` object, so a test file must leave
// `process.env` and global state as it found them (test/architecture.test.ts checks the known ways).
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** A group is full at this many seconds of its files' durations. */
export const GROUP_SECONDS = 12;
/** A file missing from test/durations.json counts as this long. */
const UNKNOWN_SECONDS = 4;

/** test/durations.json, or nothing when it is missing or unreadable (every file then counts as unknown). */
export function readDurations(root) {
  try {
    return JSON.parse(readFileSync(join(root, 'test', 'durations.json'), 'utf8'));
  } catch {
    return {};
  }
}

/**
 * The run's processes: each a list of test files (absolute paths, as given) and its expected
 * seconds, longest first. Files keep their given order inside a group.
 */
export function planProcesses(root, files, durations) {
  const seconds = (file) => durations[relative(root, file)] ?? UNKNOWN_SECONDS;
  const processes = [];
  const open = new Map(); // folder → the group being filled
  for (const file of files) {
    const s = seconds(file);
    if (s >= GROUP_SECONDS) {
      processes.push({ files: [file], seconds: s });
      continue;
    }
    const folder = dirname(file);
    let group = open.get(folder);
    if (!group || group.seconds + s > GROUP_SECONDS) {
      group = { files: [], seconds: 0 };
      open.set(folder, group);
      processes.push(group);
    }
    group.files.push(file);
    group.seconds += s;
  }
  return processes.sort((a, b) => b.seconds - a.seconds);
}
