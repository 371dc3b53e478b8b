// One child process of an audio tool (ffmpeg, ffprobe, pocketsphinx, espeak-ng, festival, mkfifo): spawned
// without a shell, killed on abort, its stderr kept up to a bound (tools can print without end on
// bad input), and its end as a promise that never rejects. A missing binary becomes
// ToolMissingError, whose message says how to install it. Every child the gateway starts goes
// through spawnTool.
//
// A child dies with the gateway, however the gateway dies (kill -9 and the OOM killer included):
// on Linux the tool is started as `setpriv --pdeathsig KILL -- <tool> <args>` (util-linux, Essential
// in Debian), which asks the kernel to SIGKILL it when its parent dies, then execs the tool (same
// pid, no process left in between). Without it a killed gateway left its pocketsphinx engines
// running for good (each ~100 MB, waiting on a control FIFO nobody would write again). It costs one
// exec, ~1 ms per spawn (measured: p50 2.2 ms against 1.3 ms for `true`), where ffmpeg's start alone
// is ~70 ms and an engine's model load 400-700 ms. Node offers no hook between fork and exec to
// call prctl itself. Two limits: the signal follows the thread that spawned, so tools must be
// spawned from the main thread (never from a worker that may end first); and a gateway killed in
// the millisecond between fork and setpriv's prctl leaves that one child orphaned: the start
// sweep (src/shared/tmp-area.ts) kills an engine working in a dead gateway's folder, and the other tools
// end on their own once their pipes close.

import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';

export class ToolMissingError extends Error {
  constructor(readonly tool: string) {
    super(`${tool} is not installed: run scripts/install-debian-packages.sh`);
    this.name = 'ToolMissingError';
  }
}

export interface ToolExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not start at all. */
  spawnError?: Error;
}

export interface ToolRun {
  child: ChildProcess;
  /** Resolves once the process has exited and its output streams have closed. */
  exited: Promise<ToolExit>;
  /** What the tool wrote to stderr, at most `stderrLimit` bytes (the first ones). */
  stderr(): string;
  kill(): void;
}

export interface SpawnToolOptions {
  /** stdin of the child: a pipe (default), an open file descriptor, or nothing. */
  stdin?: 'pipe' | 'ignore' | number;
  /** stdout of the child: a pipe (default) or an open file descriptor. */
  stdout?: 'pipe' | number;
  signal?: AbortSignal;
  stderrLimit?: number;
  /** The child's working directory (festival opens its text by a name relative to it). */
  cwd?: string;
}

/** Linux has the parent-death signal; elsewhere (a developer's macOS) tools are started as they are. */
const PARENT_DEATH_SIGNAL = process.platform === 'linux';
/** What setpriv prints (exit 127, or 126) when it cannot exec the tool. */
const EXEC_FAILED = /^setpriv: failed to execute /;

export function spawnTool(command: string, args: string[], options: SpawnToolOptions = {}): ToolRun {
  const stdio: StdioOptions = [options.stdin ?? 'pipe', options.stdout ?? 'pipe', 'pipe'];
  const [file, argv] = PARENT_DEATH_SIGNAL ? ['setpriv', ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
  const child = spawn(file, argv, { stdio, shell: false, windowsHide: true, ...(options.cwd ? { cwd: options.cwd } : {}) });
  const limit = options.stderrLimit ?? 8192;
  const chunks: Buffer[] = [];
  let kept = 0;
  const stderr = (): string => Buffer.concat(chunks).toString('utf8');
  child.stderr!.on('data', (chunk: Buffer) => {
    if (kept >= limit) return;
    const part = chunk.subarray(0, limit - kept);
    chunks.push(part);
    kept += part.length;
  });
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const onAbort = (): void => kill();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) kill();
  const exited = new Promise<ToolExit>((resolve) => {
    child.once('error', (err: NodeJS.ErrnoException) => {
      // 'error' also fires for a failed kill or write; only a failed spawn ends the run here.
      if (child.pid === undefined) {
        resolve({ code: null, signal: null, spawnError: err.code === 'ENOENT' ? new ToolMissingError(file) : err });
      }
    });
    child.once('close', (code, signal) => {
      // The tool could not be started: as if the spawn itself had failed.
      const said = (code === 127 || code === 126) && PARENT_DEATH_SIGNAL ? stderr() : '';
      if (EXEC_FAILED.test(said)) resolve({ code: null, signal: null, spawnError: code === 127 ? new ToolMissingError(command) : new Error(said.trim()) });
      else resolve({ code, signal });
    });
  }).finally(() => options.signal?.removeEventListener('abort', onAbort));
  // A tool that exits before reading all of its input makes writes to stdin fail with EPIPE;
  // the exit code says what went wrong, so the write error itself is not an error here.
  child.stdin?.on('error', () => {});
  return { child, exited, stderr, kill };
}

/** The error an abort rejects with: the signal's reason, or a standard AbortError. */
export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  return new DOMException('The operation was aborted', 'AbortError');
}
