// What the benches that run the gateway as a child process share: building and starting it as
// `npm start` does (the esbuild bundle, with test/gateway-process.ts's builder and arguments), its log in a file, reading its CPU and memory from /proc,
// and a paying account with an API key made through the admin and portal APIs.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildBundle, startArgs } from '../test/gateway-process.ts';

export { startArgs };

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const ADMIN = 'bench-admin-token-0123456789';
const CLK_TCK = 100;

/** User and system CPU seconds from a /proc stat line (fields after the `(comm)` may not be split on it). */
export function statCpu(stat: string): { user: number; sys: number; children: number } {
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return { user: Number(fields[11]) / CLK_TCK, sys: Number(fields[12]) / CLK_TCK, children: (Number(fields[13]) + Number(fields[14])) / CLK_TCK };
}

/** A process's own CPU seconds (user + system). */
export function cpuSeconds(pid: number): number {
  const { user, sys } = statCpu(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  return user + sys;
}

/** CPU seconds of the children a process has waited for (ffmpeg, ffprobe, pocketsphinx...). */
export function childrenCpuSeconds(pid: number): number {
  return statCpu(readFileSync(`/proc/${pid}/stat`, 'utf8')).children;
}

/**
 * CPU seconds of a process's children: those it has waited for, and those still running (a
 * resident engine's own and its waited-for children's), read from every /proc/<pid>/stat whose
 * parent is `pid`.
 */
export function allChildrenCpuSeconds(pid: number): number {
  let total = childrenCpuSeconds(pid);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    if (Number(stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[1]) !== pid) continue;
    const c = statCpu(stat);
    total += c.user + c.sys + c.children;
  }
  return total;
}

/** A memory figure of /proc/<pid>/status in MiB: VmHWM (peak resident set) or VmRSS (now). */
export function memMiB(pid: number, field: 'VmHWM' | 'VmRSS' = 'VmHWM'): number {
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return kb === undefined ? NaN : Number(kb) / 1024;
}

/** A process's peak resident set in whole MiB (VmHWM). */
export function peakRssMiB(pid: number): number {
  return Math.round(memMiB(pid, 'VmHWM'));
}

/**
 * Starts a server process whose stdout goes to a file (as a production gateway's logs go to a
 * collector, not into the load generator: parsing every access line here would load the process
 * that hosts the upstream and the load), and resolves to the first log line `match` accepts.
 */
export async function startLogged(
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv; log: string },
  match: (line: string) => string | null,
  what: string,
): Promise<{ child: ChildProcess; hit: string }> {
  const fd = openSync(opts.log, 'w');
  const child = spawn(process.execPath, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', fd, 'inherit'] });
  closeSync(fd);
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${what} exited with ${code} (its log: ${opts.log})`))));
  exited.catch(() => undefined);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const hit = readFileSync(opts.log, 'utf8')
      .split('\n')
      .map(match)
      .find((h) => h !== null);
    if (hit) return { child, hit };
    await Promise.race([new Promise((r) => setTimeout(r, 50)), exited]);
  }
  child.kill('SIGKILL');
  throw new Error(`${what} did not start (its log: ${opts.log})`);
}

export async function json(method: string, url: string, token: string | undefined, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const out = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(out)}`);
  return out;
}

/**
 * Builds the bundle and starts it as `npm start` does, with its data in `runDir/data` and its log in
 * `runDir/gateway.log`; `env` adds to the environment (CONFIG_FILE, ...), `nodeFlags` go first.
 */
export async function startGatewayProcess(
  runDir: string,
  opts: { env?: NodeJS.ProcessEnv; nodeFlags?: string[] } = {},
): Promise<{ child: ChildProcess; url: string }> {
  buildBundle();
  const { child, hit: url } = await startLogged(
    [...(opts.nodeFlags ?? []), ...startArgs()],
    {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', METRICS_LISTEN: '127.0.0.1:0', DATA_DIR: join(runDir, 'data'), LOG_LEVEL: 'info', ADMIN_TOKEN: ADMIN, ...opts.env },
      log: join(runDir, 'gateway.log'),
    },
    gatewayUrl,
    'gateway',
  );
  return { child, url };
}

/** A user signed up, topped up with `cents` and given an API key. */
export async function payingAccount(url: string, cents: number): Promise<{ key: string; session: string; userId: number }> {
  const user = await json('POST', `${url}/portal/auth/signup`, undefined, { email: 'bench@example.com', password: 'bench password 123' });
  await json('POST', `${url}/admin/topups`, ADMIN, { user_id: user.user.id, amount_cents: cents, reference: 'bench' });
  const key = await json('POST', `${url}/portal/keys`, user.session_token, { name: 'bench' });
  return { key: key.api_key as string, session: user.session_token as string, userId: user.user.id as number };
}

/** SIGTERM (the gateway closes cleanly), SIGKILL after 10 s; resolves once it has exited. */
export function stop(child: ChildProcess): Promise<unknown> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  return gone;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
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

/** A process's current resident set in MiB (VmRSS). */
export const rssMiB = (pid: number): number => memMiB(pid, 'VmRSS');
