// Builds the dashboard (src/dashboard/) into <outDir> (default dist/dashboard/): the account bundle
// and the operator bundle (a chunk loaded by dynamic import only after operator sign-in) as hashed
// files under assets/, and index.html naming them. Plain ESM on esbuild's API so `npm run build` runs
// it with production dependencies only. Usage: node scripts/build-dashboard.mjs [outDir]
import { build } from 'esbuild';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** @param {{ outDir?: string }} [opts] */
export async function buildDashboard(opts = {}) {
  const outDir = resolve(opts.outDir ?? join(ROOT, 'dist', 'dashboard'));
  const assets = join(outDir, 'assets');
  await rm(outDir, { recursive: true, force: true });
  await mkdir(assets, { recursive: true });
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { app: 'src/dashboard/account/main.tsx' },
    bundle: true,
    splitting: true,
    format: 'esm',
    target: ['chrome111', 'firefox111', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    legalComments: 'none',
    outdir: assets,
    entryNames: '[name]-[hash]',
    chunkNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = Object.entries(result.metafile.outputs);
  const entry = outputs.find(([, o]) => o.entryPoint === 'src/dashboard/account/main.tsx');
  if (!entry) throw new Error('dashboard build: no account entry in the metafile');
  const js = basename(entry[0]);
  const css = entry[1].cssBundle ? basename(entry[1].cssBundle) : null;
  const html = [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<title>Gateway dashboard</title>',
    '<link rel="icon" href="data:,">',
    css ? `<link rel="stylesheet" href="/dashboard/assets/${css}">` : '',
    `<script type="module" src="/dashboard/assets/${js}"></script>`,
    '</head>',
    '<body><div id="app"></div></body>',
    '</html>',
    '',
  ]
    .filter(Boolean)
    .join('\n');
  await writeFile(join(outDir, 'index.html'), html);
  // Which files each bundle is made of, for the size check: the account bundle is its entry plus
  // the chunks it imports statically; the operator bundle is what only a dynamic import reaches.
  const files = Object.fromEntries(
    outputs.map(([path, o]) => [
      basename(path),
      { bytes: o.bytes, imports: o.imports.map((i) => ({ path: basename(i.path), kind: i.kind })), entry: o.entryPoint ?? null },
    ]),
  );
  const manifest = { entry: js, css, files };
  await writeFile(join(outDir, 'manifest.json'), JSON.stringify(manifest, null, 1));
  return { outDir, ...manifest };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildDashboard(process.argv[2] ? { outDir: process.argv[2] } : {});
}
