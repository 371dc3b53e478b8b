// Runs the test suite with node:test: every test file under test/, or the ones named
// (`npm test -- test/http/keys.test.ts`); arguments that start with `--` go to node's runner
// (`npm test -- --test-name-pattern=revocation test/http/keys.test.ts`). Node 20's runner finds
// nothing from a bare glob, so the files are listed here explicitly.
//
// What every test process would otherwise do again, done once per run before the first test, into
// .test-build/ (ignored by git, remade by every run but for tsc's incremental state; one run at a
// time per checkout, as for dist/):
// - tests/: each test file compiled by esbuild into a module with all it imports from the
//   checkout, as tsx compiles (its target and keepNames), with source maps; what several files
//   import is written once, as shared chunks (tests/chunks/: 10 MB for all, against ~700 MB and a
//   minute of writing and map trimming as one module each). import.meta.url and .dirname keep
//   naming the source file, so paths built from them still land in the checkout. A test process
//   that loads the gateway then spends ~1 s of CPU before its first test instead of ~3.1 s
//   compiling a few hundred modules through tsx's loader. The production dependencies the gateway
//   bundle inlines (build-gateway.mjs) are inlined here too, their mappings dropped from the maps;
//   the test-only packages (clients, playwright) stay imports.
// - tree/: src/, machines/, scripts/ and test/ compiled file for file, for what a test runs in a
//   child process (test/build.ts).
// - server.js: the gateway bundle, built as `npm run build` builds it (build-gateway.mjs), for the tests
//   that run the gateway as a process (test/build.ts). Not dist/server.js, which
//   test/http/process.test.ts rebuilds through `npm start` while other files run.
// - dashboard/: the dashboard build, for the tests of the dashboard.
// - when a dashboard test is in the run, one Chromium (a playwright browser server) that those
//   tests connect to instead of each launching their own.
// Tests find these through GATEWAY_TEST_BUILD and GATEWAY_TEST_BROWSER; run by hand through tsx
// (`node --import tsx --test test/x.test.ts`) they build and launch what they need themselves.
//
// The tests' temporary folders (every gateway's data dir: os.tmpdir()) go to a folder of the run
// in /dev/shm when the machine has that tmpfs, removed at the end: the embedded store syncs every
// acknowledged write to disk and opens each collection and index in a synced transaction, so a
// gateway started on a disk-backed /tmp waited ~0.9 s for fsyncs against ~0.12 s on tmpfs (the same
// calls, made; only the disk under them differs). TEST_TMPDIR names another folder.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { buildDashboard } from './build-dashboard.mjs';
import { buildGateway, dropPackageMappings, packagesExternal, requireBanner } from './build-gateway.mjs';
import { nextToStart, planProcesses, readDurations } from './test-groups.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const OUT = join(ROOT, '.test-build');
const TREE = join(OUT, 'tree');
const TESTS = join(OUT, 'tests');
/** The folders compiled into TREE: everything a test imports from the checkout. */
const COMPILED = ['src', 'machines', 'scripts', 'test'];
const CHROMIUM = '/usr/bin/chromium';
/**
 * The longest a test process may run (Node 20 applies --test-timeout to each file node:test was
 * given): the longest take ~60 s, ~180 s on a 2-core machine loaded four times over.
 */
const TEST_TIMEOUT_MS = 600_000;
/** Free space a tmpfs needs to hold a run's temporary files (a whole run peaked at ~200 MB here). */
const TMP_ROOM_BYTES = 4 * 1024 ** 3;

/** A child's exit code, once its pipes are read to the end too ('close': at 'exit' they may still hold output). */
const exited = (child) => new Promise((r) => child.once('close', (code, signal) => r(code ?? (signal ? 1 : 0))));

function collect(dir, match) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== 'node_modules') out.push(...collect(path, match));
    } else if (match(name)) out.push(path);
  }
  return out;
}

/**
 * esbuild reads every file of the checkout through this: import.meta.url, .dirname and .filename
 * keep naming the source file wherever its code is written, so paths built from them still land in
 * the checkout.
 */
const sourcePaths = {
  name: 'source-paths',
  setup(b) {
    b.onLoad({ filter: /\.(tsx?|mjs)$/ }, async (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const source = await readFile(args.path, 'utf8');
      const meta = { url: pathToFileURL(args.path).href, dirname: dirname(args.path), filename: args.path };
      const loader = args.path.endsWith('.mjs') ? 'js' : args.path.endsWith('x') ? 'tsx' : 'ts';
      return { contents: source.replace(/\bimport\.meta\.(url|dirname|filename)\b/g, (_, k) => JSON.stringify(meta[k])), loader };
    });
  },
};

/** As tsx compiles (its target and keepNames), so the code runs as it did through tsx. */
const compileOptions = {
  absWorkingDir: ROOT,
  outbase: ROOT,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: `node${process.versions.node}`,
  keepNames: true,
  sourcemap: true,
  sourcesContent: false, // the sources are in the checkout: smaller maps for node to read
  logLevel: 'warning',
};

/**
 * The .ts and .tsx files of the COMPILED folders into TREE, one output file per source file, for
 * what a test runs in a child process (test/build.ts).
 */
async function compileTree() {
  const entryPoints = COMPILED.flatMap((dir) => collect(join(ROOT, dir), (name) => /\.tsx?$/.test(name) && !name.endsWith('.d.ts')));
  const compiled = new Set(entryPoints);
  // Every import stays an import (bundle: true only so that this hook sees them): packages and
  // node: as they are, a compiled file by its .js, any other file of the checkout where it is.
  const imports = {
    name: 'imports',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === 'entry-point') return undefined;
        if (!/^[./]/.test(args.path)) return { path: args.path, external: true };
        const target = resolve(args.resolveDir, args.path);
        if (!/\.tsx?$/.test(target)) return { path: pathToFileURL(target).href, external: true };
        if (!compiled.has(target)) throw new Error(`${args.importer} imports ${args.path}, outside ${COMPILED.join(', ')}`);
        return { path: args.path.replace(/\.tsx?$/, '.js'), external: true };
      });
    },
  };
  await build({ ...compileOptions, entryPoints, outdir: TREE, plugins: [imports, sourcePaths] });
}

/**
 * Each test file into TESTS as one module with all it imports from the checkout (packages stay
 * imports): a test process then loads one module of ours instead of a few hundred.
 */
async function bundleTests(files) {
  await build({
    ...compileOptions,
    entryPoints: files,
    outdir: TESTS,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    plugins: [packagesExternal, sourcePaths],
    banner: requireBanner,
  });
  await Promise.all(collect(TESTS, (name) => name.endsWith('.js.map')).map(dropPackageMappings));
}

const args = process.argv.slice(2);
const nodeArgs = args.filter((a) => a.startsWith('--') && a !== '--typecheck' && a !== '--durations');
const named = args.filter((a) => !a.startsWith('--'));
const files = named.length > 0 ? named.map((f) => resolve(f)) : collect(join(ROOT, 'test'), (name) => name.endsWith('.test.ts'));
if (files.length === 0) {
  console.error('no test files found under test/');
  process.exit(1);
}
for (const f of files) {
  if (!f.startsWith(join(ROOT, 'test') + '/') || !f.endsWith('.test.ts')) {
    console.error(`not a test file under test/: ${relative(ROOT, f)}`);
    process.exit(1);
  }
}

// With --typecheck (npm test), the static checks run beside the build and the tests rather than
// before them: `npm run typecheck` (tsc keeps one core busy for ~15 s on a fresh checkout, and the
// other one was left idle), then `npm run lint` (Biome: the formatter's and the linter's checks, ~1 s).
// Their errors are printed as soon as each ends, and fail the run.
const typechecked = args.includes('--typecheck') ? staticChecks() : Promise.resolve(0);
async function staticChecks() {
  for (const script of ['typecheck', 'lint']) {
    const child = spawn('npm', ['run', '--silent', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    const code = await exited(child);
    if (code !== 0) {
      process.stderr.write(Buffer.concat([...output, Buffer.from(`✖ npm run ${script} failed (exit ${code})\n`)]));
      return code;
    }
  }
  return 0;
}

/**
 * The run's folder for the tests' temporary files: in TEST_TMPDIR, else /dev/shm when it has room
 * for a run (a container's default 64 MB does not), else os.tmpdir().
 */
async function runTmpdir() {
  const roomy = (dir) => {
    if (!existsSync(dir)) return false;
    const { bavail, bsize } = statfsSync(dir);
    return bavail * bsize >= TMP_ROOM_BYTES;
  };
  for (const base of [process.env.TEST_TMPDIR, roomy('/dev/shm') && '/dev/shm', tmpdir()]) {
    if (!base || !existsSync(base)) continue;
    try {
      return await mkdtemp(join(base, 'gateway-tests-'));
    } catch {} // not writable here: the next
  }
  throw new Error("no writable folder for the tests' temporary files");
}

const started = performance.now();
await Promise.all(['tree', 'tests', 'dashboard', 'server.js', 'server.js.map'].map((name) => rm(join(OUT, name), { recursive: true, force: true })));
await Promise.all([compileTree(), bundleTests(files), buildDashboard({ outDir: join(OUT, 'dashboard') }), buildGateway({ outfile: join(OUT, 'server.js') })]);
const tmp = await runTmpdir();
const env = { ...process.env, NODE_ENV: 'test', GATEWAY_TEST_BUILD: OUT, TMPDIR: tmp };

let browser = null;
if (files.some((f) => f.startsWith(join(ROOT, 'test', 'dashboard') + '/'))) {
  const { chromium } = await import('playwright-core');
  // A fake microphone (a tone), granted without a prompt: the dashboard's Try recognition records from it.
  const fakeMic = ['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream'];
  try {
    browser = await chromium.launchServer({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-background-networking', '--disable-dev-shm-usage', ...fakeMic],
    });
    env.GATEWAY_TEST_BROWSER = browser.wsEndpoint();
  } catch (err) {
    // The dashboard tests then launch it themselves, and fail saying why; the other tests run.
    console.error(`ℹ no shared Chromium for the dashboard tests: ${err instanceof Error ? err.message.split('\n')[0] : err}`);
  }
}
console.log(`ℹ built for the run in ${Math.round(performance.now() - started)} ms (${relative(ROOT, OUT)}/)`);

const bundled = (file) => join(TESTS, relative(ROOT, file)).replace(/\.ts$/, '.js');
// A test process that hangs (a promise nothing settles) fails after TEST_TIMEOUT_MS instead of holding the run.
const testProcess = (entry, stdio) =>
  spawn(process.execPath, ['--enable-source-maps', '--test', `--test-timeout=${TEST_TIMEOUT_MS}`, '--test-reporter=spec', ...nodeArgs, entry], { stdio, env });

if (args.includes('--durations')) {
  // Each file alone, one after another: its seconds and CPU seconds (its processes', waited for:
  // /proc/self/stat's children times) into test/durations.json (scripts/test-groups.mjs).
  const childrenCpu = () =>
    readFileSync('/proc/self/stat', 'utf8')
      .split(') ')[1]
      .split(' ')
      .slice(13, 15)
      .reduce((a, b) => a + Number(b), 0) / 100;
  const durations = readDurations(ROOT);
  for (const file of files) {
    const began = performance.now();
    const cpu = childrenCpu();
    const code = await exited(testProcess(bundled(file), 'inherit'));
    if (code !== 0) console.error(`✖ ${relative(ROOT, file)} failed: its duration is not recorded`);
    else durations[relative(ROOT, file)] = [Math.round((performance.now() - began) / 100) / 10, Math.round((childrenCpu() - cpu) * 10) / 10];
  }
  const lines = Object.entries(durations)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([file, [s, cpu]]) => ` ${JSON.stringify(file)}: [${s}, ${cpu}]`);
  writeFileSync(join(ROOT, 'test', 'durations.json'), `{\n${lines.join(',\n')}\n}\n`);
  await browser?.close();
  await rm(tmp, { recursive: true, force: true });
  process.exit(0);
}

// Short files share a process (scripts/test-groups.mjs): a group is a module that imports its
// files' bundles in order, under .test-build/tests/groups/. Each process is its own `node --test`
// of one entry, started when its share of a core fits beside those running (nextToStart) in 1.5×
// the cores (TEST_LOAD sets the factor: the shares were measured alone, and a process does not
// use its share evenly; at 1× the cores sat a third idle), at most maxProcesses (TEST_CONCURRENCY
// overrides) at a time; its report is printed whole when it ends, and the counts of all of them at
// the end. TEST_SCHEDULE=1 prints when each process starts and ends.
const cores = availableParallelism();
const maxProcesses = Number(process.env.TEST_CONCURRENCY) || cores * 4;
const load = Number(process.env.TEST_LOAD) || 1.5;
const processes = files.length > 1 ? planProcesses(ROOT, files, readDurations(ROOT)) : [{ files, seconds: 0, cpu: 0 }];
mkdirSync(join(TESTS, 'groups'), { recursive: true });
for (const [i, p] of processes.entries()) {
  if (p.files.length === 1) {
    p.entry = bundled(p.files[0]);
    p.name = relative(ROOT, p.files[0]);
    continue;
  }
  p.name = `${relative(ROOT, dirname(p.files[0]))} (${p.files.length} files)`;
  p.entry = join(TESTS, 'groups', `${String(i).padStart(3, '0')}-${relative(join(ROOT, 'test'), dirname(p.files[0])).replaceAll('/', '-') || 'test'}.js`);
  writeFileSync(p.entry, p.files.map((f) => `import ${JSON.stringify(relative(dirname(p.entry), bundled(f)).replace(/^(?!\.)/, './'))};\n`).join(''));
}
if (processes.length < files.length) console.log(`ℹ ${files.length} test files in ${processes.length} processes`);
const status = await runAll(processes);
await browser?.close();
await rm(tmp, { recursive: true, force: true });
const typeErrors = await typechecked;
if (args.includes('--typecheck') && typeErrors === 0) console.log('ℹ typecheck and lint passed');
process.exit(status || typeErrors);

/** Runs the processes (nextToStart decides when each starts); 0 when every test passed, else 1. */
async function runAll(queue) {
  const COUNTS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'];
  const totals = Object.fromEntries(COUNTS.map((k) => [k, 0]));
  const failures = [];
  const running = new Set();
  const began = performance.now();
  const seconds = () => Math.round((performance.now() - began) / 1000);
  let failed = false;
  await new Promise((done) => {
    const startMore = () => {
      for (let i; (i = nextToStart(queue, [...running], { cores: cores * load, maxProcesses })) >= 0; ) {
        const p = queue.splice(i, 1)[0];
        running.add(p);
        if (process.env.TEST_SCHEDULE) console.error(`ℹ ${seconds()} s: start ${p.name} (measured ${p.seconds} s, ${p.cpu} s of CPU), ${running.size} running`);
        void runOne(p).then(() => {
          if (process.env.TEST_SCHEDULE) console.error(`ℹ ${seconds()} s: end ${p.name}`);
          running.delete(p);
          startMore();
        });
      }
      if (running.size === 0 && queue.length === 0) done();
    };
    startMore();
  });
  for (const k of COUNTS) console.log(`ℹ ${k} ${totals[k]}`);
  console.log(`ℹ duration_ms ${Math.round(performance.now() - began)}`);
  if (failures.length > 0) console.log(`\n✖ failing tests:\n\n${failures.join('\n')}`);
  return failed ? 1 : 0;

  async function runOne(p) {
    const child = testProcess(p.entry, ['ignore', 'pipe', 'pipe']);
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    const code = await exited(child);
    // The spec reporter (no colours into a pipe) ends with its counts (`ℹ pass 12`), then the
    // failing tests again: the counts are summed, the failing tests printed again at the end.
    const text = Buffer.concat(chunks).toString();
    const summary = text.search(/^ℹ tests \d+$/m);
    let counted = false;
    for (const [, k, n] of text.slice(Math.max(summary, 0)).matchAll(/^ℹ (\w+) (\d+)$/gm)) {
      if (k in totals) {
        totals[k] += Number(n);
        counted = true;
      }
    }
    const failing = text.indexOf('✖ failing tests:', Math.max(summary, 0));
    if (failing >= 0) failures.push(text.slice(failing + '✖ failing tests:'.length).trim() + '\n');
    process.stdout.write(summary >= 0 ? text.slice(0, summary) : text);
    if (code !== 0) {
      failed = true;
      if (!counted || !/^ℹ fail [1-9]/m.test(text)) failures.push(`${p.name}: the test process exited with ${code}\n`);
    }
  }
}
