// One child process of an audio tool (ffmpeg, ffprobe, pocketsphinx): spawned without a shell,
// killed on abort, its stderr kept up to a bound (tools can print without end on bad input), and
// its end as a promise that never rejects. A missing binary becomes ToolMissingError, whose message
// says how to install it.

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
}

export function spawnTool(command: string, args: string[], options: SpawnToolOptions = {}): ToolRun {
  const stdio: StdioOptions = [options.stdin ?? 'pipe', options.stdout ?? 'pipe', 'pipe'];
  const child = spawn(command, args, { stdio, shell: false, windowsHide: true });
  const limit = options.stderrLimit ?? 8192;
  const chunks: Buffer[] = [];
  let kept = 0;
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
        resolve({ code: null, signal: null, spawnError: err.code === 'ENOENT' ? new ToolMissingError(command) : err });
      }
    });
    child.once('close', (code, signal) => resolve({ code, signal }));
  }).finally(() => options.signal?.removeEventListener('abort', onAbort));
  // A tool that exits before reading all of its input makes writes to stdin fail with EPIPE;
  // the exit code says what went wrong, so the write error itself is not an error here.
  child.stdin?.on('error', () => {});
  return { child, exited, stderr: () => Buffer.concat(chunks).toString('utf8'), kill };
}

/** The error an abort rejects with: the signal's reason, or a standard AbortError. */
export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  return new DOMException('The operation was aborted', 'AbortError');
}
