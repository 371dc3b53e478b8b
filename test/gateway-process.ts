// The gateway as a real child process with its own data directory, started as `npm start` starts it
// (the esbuild bundle, built by buildBundle once per test file) or from the run's code (test/build.ts).
// Used by the tests that kill it.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { runBundle } from './build.ts';
import { languageModelCache } from './helper.ts';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Builds the bundle as `npm start` does (`npm run build`). */
export function buildBundle(): void {
  const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  assert.equal(build.status, 0, 'npm run build failed');
}

/**
 * The node arguments `npm start` runs the gateway with (after `exec node`), so tests and benches run
 * the same; the script's path made absolute, for a child started in another working directory.
 */
export function startArgs(): string[] {
  const start = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const m = /^exec node (.+)$/.exec(start);
  if (!m) throw new Error(`unexpected start script: ${start}`);
  return m[1]!.split(' ').map((arg) => (arg.endsWith('.js') ? join(ROOT, arg) : arg));
}

/**
 * The node arguments of a gateway process on the run's code: the bundle scripts/run-tests.mjs built
 * for the run, run as `npm start` runs dist/server.js; or src/server.ts through tsx when the tests
 * run from the sources.
 */
export function gatewayArgs(): string[] {
  const bundle = runBundle();
  if (!bundle) return ['--import', 'tsx', join(ROOT, 'src', 'server.ts')];
  return startArgs().map((arg) => (arg === join(ROOT, 'dist', 'server.js') ? bundle : arg));
}

export interface Launched {
  child: ChildProcess;
  url: string;
  startMs: number;
  /** Every JSON log line the process wrote so far (and on). */
  logs: Record<string, unknown>[];
}

/**
 * Starts the gateway on `dataDir`: dist/server.js (built first), `npm start` itself with `npmStart`,
 * or the run's code with `runCode` (gatewayArgs: not dist/, so no race with a test file rebuilding it
 * concurrently).
 */
export async function launch(dataDir: string, opts: { cwd?: string; env?: NodeJS.ProcessEnv; npmStart?: boolean; runCode?: boolean } = {}): Promise<Launched> {
  const [command, args] = opts.npmStart ? ['npm', ['start', '--silent']] : [process.execPath, opts.runCode ? gatewayArgs() : startArgs()];
  const child = spawn(command, args, {
    cwd: opts.cwd ?? ROOT,
    env: {
      ...process.env,
      PORT: '0',
      METRICS_LISTEN: '127.0.0.1:0',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      ADMIN_TOKEN: '',
      LANGUAGE_MODEL_CACHE_DIR: languageModelCache(), // as the in-process test gateways (test/helper.ts)
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: opts.npmStart === true, // its own process group, so a test can kill whatever npm started
  });
  const logs: Record<string, unknown>[] = [];
  const lines = createInterface({ input: child.stdout! });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('gateway did not start in 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`gateway exited early with ${code}`)));
    lines.on('line', (line) => {
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(line);
      } catch {
        return; // not JSON
      }
      logs.push(rec);
      if (rec.msg === 'gateway started') {
        clearTimeout(timer);
        resolve({ child, url: rec.url as string, startMs: rec.start_ms as number, logs });
      }
    });
  });
}

export const exited = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: string | null }>((r) => {
    if (child.exitCode !== null || child.signalCode !== null) r({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => r({ code, signal }));
  });
