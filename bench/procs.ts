// What the benches share: child server processes started with their logs in a file, their CPU and
// memory read from /proc, and JSON calls to the gateway's admin and portal APIs.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const CLK_TCK = 100;

/** User and system CPU seconds from a /proc stat line (fields after the `(comm)` may not be split on it). */
export function statCpu(stat: string): { user: number; sys: number } {
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return { user: Number(fields[11]) / CLK_TCK, sys: Number(fields[12]) / CLK_TCK };
}

export function cpuSeconds(pid: number): number {
  const { user, sys } = statCpu(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  return user + sys;
}

/** A process's peak resident set in MiB, from /proc/<pid>/status (VmHWM). */
export function peakRssMiB(pid: number): number {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return kb === undefined ? NaN : Math.round(Number(kb) / 1024);
}

/**
 * Starts a server process whose stdout goes to a file (as a production gateway's logs go to a
 * collector, not into the load generator: parsing every access line here would load the process
 * that hosts the upstream and autocannon), and resolves to the first log line `match` accepts.
 */
export async function startLogged(args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; log: string }, match: (line: string) => string | null, what: string): Promise<{ child: ChildProcess; hit: string }> {
  const fd = openSync(opts.log, 'w');
  const child = spawn(process.execPath, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', fd, 'inherit'] });
  closeSync(fd);
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${what} exited with ${code} (its log: ${opts.log})`))));
  exited.catch(() => undefined);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const hit = readFileSync(opts.log, 'utf8').split('\n').map(match).find((h) => h !== null);
    if (hit) return { child, hit };
    await Promise.race([new Promise((r) => setTimeout(r, 50)), exited]);
  }
  child.kill('SIGKILL');
  throw new Error(`${what} did not start (its log: ${opts.log})`);
}

export async function json(method: string, url: string, token: string | undefined, body?: unknown) {
  const res = await fetch(url, { method, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: body === undefined ? undefined : JSON.stringify(body) });
  const out = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(out)}`);
  return out;
}

/** The node arguments `npm start` runs the gateway with (after `exec node`), so the bench runs the same. */
export function startArgs(root: string): string[] {
  const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const m = /^exec node (.+)$/.exec(start);
  if (!m) throw new Error(`unexpected start script: ${start}`);
  return m[1]!.split(' ');
}


/** A process's current resident set in MiB (VmRSS). */
export function rssMiB(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return kb === undefined ? NaN : Number(kb) / 1024;
}

/** The gateway's URL from its "gateway started" log line (null for any other line). */
export function gatewayUrl(line: string): string | null {
  try {
    const rec = JSON.parse(line);
    return rec.msg === 'gateway started' ? String(rec.url) : null;
  } catch {
    return null;
  }
}
