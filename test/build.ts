// What scripts/run-tests.mjs built once for the run (GATEWAY_TEST_BUILD: the compiled tree, the
// gateway bundle, the dashboard) and the browser it launched (GATEWAY_TEST_BROWSER), and how a test
// runs code in a child process the way its own code runs: from that build when the runner started
// the test, from the sources through tsx when the file is run by hand
// (`node --import tsx --test test/x.test.ts`), which then builds what it needs itself.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildDashboard, type DashboardBuild } from '../scripts/build-dashboard.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The run's build directory, or undefined when the tests run from the sources. */
export const RUN_BUILD = process.env.GATEWAY_TEST_BUILD || undefined;
/** The playwright endpoint of the run's Chromium, or undefined (a test then launches its own). */
export const RUN_BROWSER = process.env.GATEWAY_TEST_BROWSER || undefined;

/** The run's compiled file for the checkout's TypeScript file `path` (absolute). */
function compiled(build: string, path: string): string {
  return join(build, 'tree', relative(ROOT, path)).replace(/\.tsx?$/, '.js');
}

/** The node arguments that run the TypeScript file `path` (absolute) as a child's main module. */
export function nodeArgsFor(path: string): string[] {
  return RUN_BUILD ? [compiled(RUN_BUILD, path)] : ['--import', 'tsx', path];
}

/**
 * For a child that runs a script given with `-e`: the node arguments it needs before it (tsx's
 * loader, none for the build) and the URL its script imports for the TypeScript file `path`.
 */
export function evalModule(path: string): { loader: string[]; url: string } {
  return RUN_BUILD ? { loader: [], url: pathToFileURL(compiled(RUN_BUILD, path)).href } : { loader: ['--import', 'tsx'], url: pathToFileURL(path).href };
}

/** The gateway bundle the runner built (as `npm run build` builds dist/server.js), or undefined. */
export const runBundle = (): string | undefined => (RUN_BUILD ? join(RUN_BUILD, 'server.js') : undefined);

/** The dashboard build: the run's (shared, left in place), or a fresh one in a temp dir that `dispose` removes. */
export async function dashboardBuild(): Promise<{ build: DashboardBuild; dispose(): Promise<void> }> {
  if (RUN_BUILD) {
    const outDir = join(RUN_BUILD, 'dashboard');
    const manifest = JSON.parse(await readFile(join(outDir, 'manifest.json'), 'utf8')) as Omit<DashboardBuild, 'outDir'>;
    return { build: { outDir, ...manifest }, dispose: async () => {} };
  }
  const dir = await mkdtemp(join(tmpdir(), 'gw-dash-'));
  return { build: await buildDashboard({ outDir: dir }), dispose: () => rm(dir, { recursive: true, force: true }) };
}
