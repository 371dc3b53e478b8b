// Runs the test suite with node:test: every test file under test/, or the ones named
// (`npm test -- test/http/keys.test.ts`); arguments that start with `--` go to node's runner
// (`npm test -- --test-name-pattern=revoke test/http/keys.test.ts`). Node 20's runner finds nothing
// from a bare glob, so the files are listed here explicitly.
//
// What every test process would otherwise do again, done once per run before the first test, into
// .test-build/ (ignored by git, remade by every run; one run at a time per checkout, as for dist/):
// - src/, machines/, scripts/ and test/ compiled by esbuild file for file into tree/ (JavaScript and
//   source maps, the same layout; an import of a .ts file names its .js, and import.meta.url and
//   .dirname keep naming the source file, so paths built from them still land in the checkout).
//   Test processes then load plain JavaScript instead of compiling every module through tsx's
//   loader: about half the CPU each of ~130 processes spends before its first test.
// - server.js: the gateway bundle, built by `npm run build`'s own esbuild command, for the tests
//   that run the gateway as a process (test/build.ts). Not dist/server.js, which
//   test/http/process.test.ts rebuilds through `npm start` while other files run.
// - dashboard/: the dashboard build, for the tests of the dashboard.
// - when a dashboard test is in the run, one Chromium (a playwright browser server) that those
//   tests connect to instead of each launching its own.
// Tests find these through GATEWAY_TEST_BUILD and GATEWAY_TEST_BROWSER; run by hand through tsx
// (`node --import tsx --test test/x.test.ts`) they build and launch what they need themselves.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { buildDashboard } from './build-dashboard.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const OUT = join(ROOT, '.test-build');
const TREE = join(OUT, 'tree');
/** The folders compiled into TREE: everything a test imports from the checkout. */
const COMPILED = ['src', 'machines', 'scripts', 'test'];
const CHROMIUM = '/usr/bin/chromium';

const exited = (child) => new Promise((r) => child.once('exit', (code, signal) => r(code ?? (signal ? 1 : 0))));

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

/** The .ts and .tsx files of the COMPILED folders into TREE, one output file per source file. */
async function compileTree() {
  const entryPoints = COMPILED.flatMap((dir) => collect(join(ROOT, dir), (name) => /\.tsx?$/.test(name) && !name.endsWith('.d.ts')));
  const compiled = new Set(entryPoints);
  const sourceTree = {
    name: 'source-tree',
    setup(b) {
      // Every import stays an import (bundle: true only so that this hook sees them): packages and
      // node: as they are, a compiled file by its .js, any other file of the checkout where it is.
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === 'entry-point') return undefined;
        if (!/^[./]/.test(args.path)) return { path: args.path, external: true };
        const target = resolve(args.resolveDir, args.path);
        if (!/\.tsx?$/.test(target)) return { path: pathToFileURL(target).href, external: true };
        if (!compiled.has(target)) throw new Error(`${args.importer} imports ${args.path}, outside ${COMPILED.join(', ')}`);
        return { path: args.path.replace(/\.tsx?$/, '.js'), external: true };
      });
      b.onLoad({ filter: /\.tsx?$/ }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        const meta = { url: pathToFileURL(args.path).href, dirname: dirname(args.path), filename: args.path };
        return { contents: source.replace(/\bimport\.meta\.(url|dirname|filename)\b/g, (_, k) => JSON.stringify(meta[k])), loader: args.path.endsWith('x') ? 'tsx' : 'ts' };
      });
    },
  };
  // As tsx compiles (its target and keepNames), so the code runs as it did through tsx.
  await build({
    absWorkingDir: ROOT,
    entryPoints,
    outdir: TREE,
    outbase: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node}`,
    keepNames: true,
    sourcemap: true,
    sourcesContent: false, // the sources are in the checkout: smaller maps for node to read
    plugins: [sourceTree],
    logLevel: 'warning',
  });
}

/** The gateway bundle at OUT/server.js: the esbuild command of `npm run build`, with another outfile. */
async function bundleGateway() {
  const script = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.build;
  const [command, ...args] = script.split('&&')[0].trim().split(/\s+/);
  if (command !== 'esbuild' || !args.includes('--outfile=dist/server.js')) throw new Error(`unexpected build script: ${script}`);
  // OUT is one level below the checkout as dist/ is, so the bundle finds config/ as dist/server.js does.
  const outfile = `--outfile=${relative(ROOT, join(OUT, 'server.js'))}`;
  const run = spawn(join(ROOT, 'node_modules', '.bin', 'esbuild'), args.map((a) => (a === '--outfile=dist/server.js' ? outfile : a)), { cwd: ROOT, stdio: 'inherit' });
  if ((await exited(run)) !== 0) throw new Error('bundling the gateway failed');
}

const nodeArgs = process.argv.slice(2).filter((a) => a.startsWith('--'));
const named = process.argv.slice(2).filter((a) => !a.startsWith('--'));
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

const started = performance.now();
await rm(OUT, { recursive: true, force: true });
await Promise.all([compileTree(), buildDashboard({ outDir: join(OUT, 'dashboard') }), bundleGateway()]);
const env = { ...process.env, NODE_ENV: 'test', GATEWAY_TEST_BUILD: OUT };

let browser = null;
if (files.some((f) => f.startsWith(join(ROOT, 'test', 'dashboard') + '/'))) {
  const { chromium } = await import('playwright-core');
  browser = await chromium.launchServer({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-background-networking', '--disable-dev-shm-usage'] });
  env.GATEWAY_TEST_BROWSER = browser.wsEndpoint();
}
console.log(`ℹ built for the run in ${Math.round(performance.now() - started)} ms (${relative(ROOT, OUT)}/)`);

const child = spawn(
  process.execPath,
  ['--enable-source-maps', '--test', '--test-reporter=spec', '--test-concurrency=2', ...nodeArgs, ...files.map((f) => join(TREE, relative(ROOT, f)).replace(/\.ts$/, '.js'))],
  { stdio: 'inherit', env },
);
const status = await exited(child);
await browser?.close();
process.exit(status);
