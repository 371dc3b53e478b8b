// Bundles the gateway (src/server.ts and all it imports from src/ and machines/) into <outfile>
// (default dist/server.js) with esbuild: what `npm run build` and `npm start` run. The production
// dependencies are bundled too, except EXTERNAL: a start then reads and compiles one file instead of
// several hundred modules from node_modules (0.92 s of CPU to a first answer, 0.70 s bundled; typebox
// alone is 709 ES modules, ~0.3 s). The test runner bundles the test files the same way.
// Plain ESM on esbuild's API so it runs with production dependencies only.
// Usage: node scripts/build-gateway.mjs [outfile]
import { decode, encode } from '@jridgewell/sourcemap-codec';
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/**
 * Production dependencies that stay imports from node_modules: native addons (lmdb, argon2), those
 * that read files beside their own code (the WASM of the VAD and the resampler), the MongoDB driver
 * (loaded only when a MongoDB URL is configured) and esbuild (the build itself).
 */
export const EXTERNAL = ['lmdb', '@node-rs/argon2', 'mongodb', 'esbuild', '@echogarden/fvad-wasm', '@echogarden/speex-resampler-wasm'];

/** The production dependencies bundled (with their subpaths: typebox/value). */
export const INLINED = Object.keys(JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')).dependencies).filter((name) => !EXTERNAL.includes(name));

/** Every package an import, except INLINED (and what they import in turn, bundled with them). */
export const packagesExternal = {
  name: 'packages-external',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      if (args.importer.includes('/node_modules/') && !args.path.startsWith('node:')) return undefined; // a bundled package's own dependency
      const name = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0];
      return INLINED.includes(name) ? undefined : { path: args.path, external: true };
    });
  },
};

/**
 * The CommonJS among the bundled packages call require(): ESM has none, so the bundle makes one.
 * Its `import.meta.url` is written in two pieces: scripts/run-tests.mjs rewrites that expression
 * into the file's path in every file a test imports, this one included (test/build-gateway.test.ts).
 */
export const requireBanner = { js: `import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.${'meta'}.url);` };

/**
 * Drops from a source map what maps into node_modules: a stack frame there names the bundle's line,
 * a frame of ours its source as before. With the packages' mappings the map is 10.8 MB, and node
 * (--enable-source-maps) parses it at the first stack it prints: 250 ms of CPU and 144 MiB held for
 * the life of the process; without them, as before the packages were bundled, ~55 ms and ~30 MiB.
 * Node reads a position as the nearest mapping at or before it, across lines: with a package's
 * mappings simply left out, a frame in it named the last line of ours above it in the bundle, in
 * another file (issue 39). So each run of package mappings becomes one mapping without a source,
 * at its start, which node leaves unmapped.
 * @param {string} path
 */
export async function dropPackageMappings(path) {
  const map = JSON.parse(await readFile(path, 'utf8'));
  const packages = new Set(map.sources.flatMap((source, i) => (source.includes('node_modules/') ? [i] : [])));
  if (packages.size === 0) return;
  let inPackage = false;
  const line = (segments) =>
    segments.flatMap((segment) => {
      if (segment.length === 1) return [segment];
      const ofPackage = packages.has(segment[1]);
      const first = ofPackage && !inPackage;
      inPackage = ofPackage;
      return !ofPackage ? [segment] : first ? [[segment[0]]] : [];
    });
  map.mappings = encode(decode(map.mappings).map(line));
  await writeFile(path, JSON.stringify(map));
}

/** @param {{ outfile?: string }} [opts] */
export async function buildGateway(opts = {}) {
  const outfile = resolve(opts.outfile ?? `${ROOT}dist/server.js`);
  await build({
    absWorkingDir: ROOT,
    entryPoints: ['src/server.ts'],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    sourcesContent: false, // stack traces need the mappings only
    logLevel: 'warning',
    plugins: [packagesExternal],
    banner: requireBanner,
    outfile,
  });
  await dropPackageMappings(`${outfile}.map`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildGateway({ outfile: process.argv[2] });
