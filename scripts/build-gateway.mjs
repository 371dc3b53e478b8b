// Bundles the gateway (src/server.ts and all it imports from src/ and machines/) into <outfile>
// (default dist/server.js) with esbuild: what `npm run build` and `npm start` run. Packages stay
// imports from node_modules, except those in INLINED: ES module packages of hundreds of small files,
// whose loading, a module at a time, cost more than all our code (typebox: 709 modules, ~0.3 s of
// CPU at each start; mingo ~0.1 s), and which load in ~0.05 s together once bundled.
// Plain ESM on esbuild's API so it runs with production dependencies only.
// Usage: node scripts/build-gateway.mjs [outfile]
import { build } from 'esbuild';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Packages bundled rather than imported (and their subpaths: typebox/value). */
export const INLINED = ['typebox', 'mingo'];

/** esbuild's `packages: 'external'`, except INLINED. */
export const packagesExternal = {
  name: 'packages-external',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      const name = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0];
      return INLINED.includes(name) ? undefined : { path: args.path, external: true };
    });
  },
};

/** @param {{ outfile?: string }} [opts] */
export async function buildGateway(opts = {}) {
  await build({
    absWorkingDir: ROOT,
    entryPoints: ['src/server.ts'],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
    plugins: [packagesExternal],
    outfile: resolve(opts.outfile ?? `${ROOT}dist/server.js`),
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildGateway({ outfile: process.argv[2] });
