// Edges that stay edges: the HTTP edge (src/http/) and the WebSocket edge (src/ws/) know the domain,
// never the reverse. Read from the sources' import statements (a regex over each file: static
// `import … from`, `export … from`, `import '…'` and dynamic `import('…')`, type imports included),
// relative paths resolved to files.
// - Only the edges themselves and src/server.ts (the composition root, which builds the app and
//   attaches the socket edge) import from src/http/ or src/ws/.
// - Domain modules (everything else under src/, and machines/) never import fastify or @fastify/*.
// - Only src/server.ts imports src/http/app.ts: routes take App and AppDeps from src/http/types.ts,
//   and no import cycle passes through an edge module (the 27-file type cycle through every route).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const COMPOSITION_ROOT = 'src/server.ts';

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir)).sort()) {
    const path = `${dir}/${name}`;
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sources(path));
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const STATIC = /^[ \t]*(?:import|export)\b(?:[^;'"`]|\n)*?\bfrom\s*['"]([^'"\n]+)['"]/gm;
const BARE = /^[ \t]*import\s*['"]([^'"\n]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"\n]+)['"]\s*\)/g;

/** The specifiers a file imports, as written. */
function specifiersOf(text: string): string[] {
  return [STATIC, BARE, DYNAMIC].flatMap((re) => [...text.matchAll(re)].map((m) => m[1]!));
}

/** A relative specifier as a path from the repository root (`src/http/app.ts`); null for a package. */
function resolveFrom(file: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const base = relative(ROOT, resolve(ROOT, dirname(file), specifier));
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`]) {
    if (/\.tsx?$/.test(candidate) && existsSync(join(ROOT, candidate))) return candidate;
  }
  return base;
}

interface Module {
  path: string;
  /** Repository paths of the relative imports. */
  files: string[];
  /** Package specifiers (`fastify`, `@fastify/multipart`, `node:fs`). */
  packages: string[];
}

function graph(): Map<string, Module> {
  const modules = new Map<string, Module>();
  for (const path of [...sources('src'), ...sources('machines')]) {
    const specifiers = specifiersOf(readFileSync(join(ROOT, path), 'utf8'));
    const files = specifiers.map((s) => resolveFrom(path, s)).filter((p): p is string => p !== null);
    modules.set(path, { path, files: [...new Set(files)], packages: specifiers.filter((s) => !s.startsWith('.')) });
  }
  return modules;
}

const isEdge = (path: string) => path.startsWith('src/http/') || path.startsWith('src/ws/');
const isFastify = (specifier: string) => /^fastify(\/|$)|^@fastify\//.test(specifier);

/** Whether `to` can be reached from `from` by following imports. */
function reaches(modules: Map<string, Module>, from: string, to: string): boolean {
  const seen = new Set<string>([from]);
  const queue = [from];
  while (queue.length > 0) {
    const at = queue.pop()!;
    if (at === to) return true;
    for (const next of modules.get(at)?.files ?? []) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return false;
}

describe('architecture: edges that stay edges', () => {
  const modules = graph();

  it('reads the imports it must see (so the rules below cannot pass on an empty graph)', () => {
    assert.ok(modules.size > 200, `${modules.size} modules`);
    const server = modules.get(COMPOSITION_ROOT)!;
    assert.ok(server.files.includes('src/http/app.ts'), 'a static import');
    const app = modules.get('src/http/app.ts')!;
    assert.ok(app.packages.includes('fastify') && app.packages.includes('@fastify/swagger'), 'package imports');
    assert.ok(modules.get('src/http/types.ts')!.packages.includes('node:http'), "a type's import('…')");
    assert.ok(modules.get('src/dashboard/account/pages/operator-gate.tsx')!.files.includes('src/dashboard/operator/operator.tsx'), 'a dynamic import');
    assert.deepEqual(
      specifiersOf("import type {\n  A,\n  B,\n} from './a.ts';\nexport { C } from \"./c.ts\";\nimport './d.css';\nexport const e = 'from ./x';\nconst f = await import('./f.ts');"),
      ['./a.ts', './c.ts', './d.css', './f.ts'],
    );
  });

  it('only the edges and the composition root import from src/http/ or src/ws/', () => {
    const violations = [...modules.values()]
      .filter((m) => !isEdge(m.path) && m.path !== COMPOSITION_ROOT)
      .flatMap((m) => m.files.filter(isEdge).map((to) => `${m.path} imports ${to}`));
    assert.deepEqual(violations, []);
  });

  it('no domain module imports fastify or @fastify/*', () => {
    const violations = [...modules.values()]
      .filter((m) => !isEdge(m.path) && m.path !== COMPOSITION_ROOT)
      .flatMap((m) => m.packages.filter(isFastify).map((p) => `${m.path} imports ${p}`));
    assert.deepEqual(violations, []);
  });

  it('only the composition root imports src/http/app.ts, and no import cycle passes through an edge', () => {
    const importers = [...modules.values()].filter((m) => m.files.includes('src/http/app.ts')).map((m) => m.path);
    assert.deepEqual(importers, [COMPOSITION_ROOT]);
    const cycles = [...modules.values()]
      .filter((m) => isEdge(m.path))
      .flatMap((m) => m.files.filter((next) => reaches(modules, next, m.path)).map((next) => `${m.path} -> ${next} -> … -> ${m.path}`));
    assert.deepEqual(cycles, []);
  });

  it('money moves only through the Meter: no module outside src/metering/ and src/billing/ holds, settles, releases or drops a hold itself', () => {
    const call = /\bbilling\??\.(hold|settle|settleForAnswer|release|drop)\(/;
    const violations = [...modules.values()]
      .filter((m) => !m.path.startsWith('src/metering/') && !m.path.startsWith('src/billing/'))
      .filter((m) => call.test(readFileSync(join(ROOT, m.path), 'utf8')))
      .map((m) => m.path);
    assert.deepEqual(violations, []);
  });
});
