// The gateway's own temp area, DATA_DIR/tmp: where the speech engines keep the audio they work on
// (a pocketsphinx engine's folder holds a realtime session's or a transcription's raw audio) and
// where a GridFS blob is copied for ffmpeg to read. Never the system's temp dir: customer audio
// stays under DATA_DIR, in folders only the gateway's user can open (0700; files 0600).
//
// Each gateway process works in a folder of its own, `<pid>-<start time>-<random>`: several
// gateways may share one DATA_DIR's tmp area (instances on one host behind MongoDB, or tests that
// run several in one process), and none may sweep another's live work. At start, before serving,
// every other entry whose process is gone (pid and start time no longer name a live process) is
// removed, after any process still working in it is killed: the engines die with the gateway
// (src/speech/process.ts), so this only catches one spawned in the instant of the kill. Nothing in
// the area outlives its gateway: a clean stop removes its folder, a crash leaves it to the next
// start. Liveness is read from /proc, so gateways sharing a DATA_DIR must share a pid namespace
// (one host, not containers mounting one volume).

import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { chmod, mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

export interface TmpArea {
  /** This process's private folder (0700), where engines make their own folders. */
  readonly dir: string;
  /** Folders of dead gateways removed at open, and processes still working in them killed. */
  readonly swept: { folders: number; processes: number };
  /** Removes this process's folder (at shutdown, once nothing works in it any more). */
  close(): Promise<void>;
}

/** A process's start time (clock ticks after boot), or null when there is no such process. */
function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name, which may hold spaces and parentheses: state is field 3, starttime 22.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

const OWNER = /^(\d+)-(\d+)-[0-9a-f]+$/;

function ownerAlive(entry: string): boolean {
  const m = OWNER.exec(entry);
  if (m === null) return false;
  if (process.platform === 'linux') return startTimeOf(Number(m[1])) === m[2];
  try {
    process.kill(Number(m[1]), 0); // no /proc (a developer's macOS): the pid alone
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Kills the processes whose arguments name a path inside `folders` (an engine's `-cepdir`); how many. */
function killWorkingIn(folders: string[]): number {
  if (folders.length === 0 || process.platform !== 'linux') return 0;
  let killed = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone, or not ours to read
    }
    if (!args.some((a) => folders.some((f) => a === f || a.startsWith(f + '/')))) continue;
    try {
      process.kill(Number(name), 'SIGKILL');
      killed++;
    } catch {
      // gone meanwhile, or another user's
    }
  }
  return killed;
}

/** Creates DATA_DIR/tmp (0700) and this process's folder in it, after sweeping what dead gateways left. */
export async function openTmpArea(dataDir: string): Promise<TmpArea> {
  const area = join(dataDir, 'tmp');
  await mkdir(area, { recursive: true, mode: 0o700 });
  await chmod(area, 0o700); // an older or hand-made folder may be wider
  const dead = (await readdir(area)).filter((entry) => !ownerAlive(entry)).map((entry) => join(area, entry));
  const processes = killWorkingIn(dead);
  for (const path of dead) await rm(path, { recursive: true, force: true });
  const start = process.platform === 'linux' ? startTimeOf(process.pid) : null;
  const dir = join(area, `${process.pid}-${start ?? '0'}-${randomBytes(4).toString('hex')}`);
  await mkdir(dir, { mode: 0o700 });
  return {
    dir,
    swept: { folders: dead.length, processes },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}
