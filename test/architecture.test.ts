// Edges that stay edges: the HTTP edge (src/http/) and the WebSocket edge (src/ws/) know the domain,
// never the reverse. Read from the sources' import statements (a regex over each file: static
// `import … from`, `export … from`, `import '…'` and dynamic `import('…')`, type imports included),
// relative paths resolved to files.
// - Only the edges themselves and src/server.ts (the composition root, which builds the app and
//   attaches the socket edge) import from src/http/ or src/ws/.
// - Domain modules (everything else under src/, and machines/) never import fastify or @fastify/*.
// - Only src/server.ts imports src/http/app.ts: routes take App and AppDeps from src/http/types.ts,
//   and no import cycle passes through an edge module (the 27-file type cycle through every route).
// One owner per collection: every store collection (and GridFS bucket collection) is opened, by a
// `collection('name')` / `collection<T>('name')` call or a change stream `store.watch('name')`, only by
// the module or folder OWNERS names for it; others ask the owner through an interface. A name is
// read from a string literal, a template literal, or a constant declared in the file or a file it
// imports; an open whose name the rule cannot read fails too. Not scanned: src/store/ (the port and
// its adapters open whatever name they are given) and test/, bench/ and scripts/ (fixtures and
// checks write and read the store directly).
// Floors, cycles and sizes: src/ and machines/ stand on floors (FLOORS, lowest first) and import
// down them, but for the few named in UPWARD; no import cycle, type-only or not; src/voice/ imports
// nothing from src/realtime/ or src/synthesis/; no source file over 450 lines; `as unknown as` at
// most 3 times in src/, each beside a comment saying why.
// Test files that share a process (scripts/test-groups.mjs): no test file registers a hook at its
// top level (it would run for every file of its group), and one that sets `process.env` restores it
// in a `finally`.
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

// One character class (newlines included): `(?:[^;'"\`]|\n)*?` matched a newline two ways and
// backtracked exponentially across multi-line exports (18 s of CPU for this file).
const STATIC = /^[ \t]*(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"\n]+)['"]/gm;
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

/** Each collection's owner: a module, or a folder (ending in '/') whose modules share it. */
const OWNERS: Record<string, string> = {
  // identity (src/identity/)
  users: 'src/identity/accounts.ts',
  sessions: 'src/identity/accounts.ts',
  auth_windows: 'src/identity/accounts.ts',
  orgs: 'src/identity/orgs.ts',
  memberships: 'src/identity/orgs.ts',
  org_invitations: 'src/identity/invitation-records.ts',
  invitation_windows: 'src/identity/invitations.ts',
  api_keys: 'src/identity/keys.ts',
  operator_sessions: 'src/identity/operator-sessions.ts',
  account_limits: 'src/identity/account-limits.ts',
  // billing (src/billing/): wallets.ts alone touches wallets (with its legacy holds and migration marks)
  wallets: 'src/billing/wallets.ts',
  billing_holds: 'src/billing/wallets.ts',
  migrations: 'src/billing/wallets.ts',
  swept_holds: 'src/billing/service.ts',
  rate_windows: 'src/billing/',
  usage_records: 'src/billing/usage.ts',
  usage_batches: 'src/billing/',
  usage_daily: 'src/billing/usage.ts',
  usage_daily_model: 'src/billing/usage.ts',
  usage_daily_end_user: 'src/billing/usage.ts',
  topups: 'src/billing/topups.ts',
  subscriptions: 'src/billing/subscriptions.ts',
  billing_instances: 'src/billing/instances.ts',
  // ids for every numbered collection (one counter document per sequence)
  counters: 'src/shared/common.ts',
  // the actor runtime
  actors: 'src/actors/',
  actor_inbox: 'src/actors/',
  actor_steps: 'src/actors/',
  // webhooks
  webhooks: 'src/webhooks/records.ts',
  webhook_outbox: 'src/webhooks/records.ts',
  webhook_deliveries: 'src/webhooks/records.ts',
  usage_spike_buckets: 'src/webhooks/usage-spike.ts',
  // voice calls: Idempotency-Key records of POST /v1/voice/call, and the calls' transcripts (out of their actors)
  voice_idempotency: 'src/voice/idempotency.ts',
  voice_turns: 'src/voice/transcript.ts',
  voice_tool_requests: 'src/voice/tool-journal.ts',
  voice_batch_rows: 'src/voice/batches/rows.ts',
  voice_numbers: 'src/voice/numbers.ts',
  voice_recordings: 'src/voice/recordings.ts',
  voice_handoffs: 'src/voice/handoffs.ts',
  // models, intent packs, blobs on MongoDB (GridFS)
  models: 'src/models/catalog.ts',
  model_access: 'src/models/catalog.ts',
  intent_packs: 'src/intent/packs.ts',
  intent_pack_bodies: 'src/intent/packs.ts',
  'blobs.files': 'src/blobs/gridfs.ts',
  'blobs.chunks': 'src/blobs/gridfs.ts',
};

const owns = (owner: string, path: string) => (owner.endsWith('/') ? path.startsWith(owner) : path === owner);

/** The text without comments (so a comment that quotes a call is not one). */
const uncommented = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

/** `const NAME = 'value'` declarations of a file. */
function constantsOf(text: string): Map<string, string> {
  return new Map([...text.matchAll(/\bconst\s+([A-Za-z_$][\w$]*)\s*=\s*(['"])([^'"\n]*)\2/g)].map((m) => [m[1]!, m[3]!]));
}

/** The first argument of each `.collection(…)` / `.collection<…>(…)` / `store.watch(…)` call, as written. */
function collectionArguments(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:\.collection|\bstore\.watch)\b\s*(?:\?\.)?\s*/g)) {
    let i = m.index! + m[0].length;
    if (text[i] === '<') {
      for (let depth = 0; i < text.length; i++) {
        if (text[i] === '<') depth++;
        else if (text[i] === '>' && --depth === 0) break;
      }
      i++;
      while (/\s/.test(text[i] ?? '')) i++;
    }
    if (text[i] !== '(') continue;
    let depth = 0;
    let j = i + 1;
    for (; j < text.length; j++) {
      const c = text[j]!;
      if ('([{'.includes(c)) depth++;
      else if (')]}'.includes(c)) {
        if (depth === 0) break;
        depth--;
      } else if (c === ',' && depth === 0) break;
    }
    out.push(text.slice(i + 1, j).trim());
  }
  return out;
}

/** A collection name from an argument: a literal, or constants resolved; null when it cannot be read. */
function collectionName(argument: string, constants: Map<string, string>): string | null {
  const literal = /^(['"])([^'"]*)\1$/.exec(argument);
  if (literal) return literal[2]!;
  const template = /^`([^`]*)`$/.exec(argument);
  if (template) {
    let unresolved = false;
    const name = template[1]!.replace(/\$\{\s*([A-Za-z_$][\w$]*)\s*\}/g, (_, id: string) => constants.get(id) ?? ((unresolved = true), ''));
    return unresolved || name.includes('${') ? null : name;
  }
  return /^[A-Za-z_$][\w$]*$/.test(argument) ? (constants.get(argument) ?? null) : null;
}

/** Every collection each module opens: `name` → the modules, and the opens whose name cannot be read. */
function collectionOpens(modules: Map<string, Module>): { byName: Map<string, Set<string>>; unreadable: string[] } {
  const byName = new Map<string, Set<string>>();
  const unreadable: string[] = [];
  const texts = new Map<string, string>();
  const textOf = (path: string): string => {
    let text = texts.get(path);
    if (text === undefined) texts.set(path, (text = existsSync(join(ROOT, path)) ? uncommented(readFileSync(join(ROOT, path), 'utf8')) : ''));
    return text;
  };
  for (const m of modules.values()) {
    if (m.path.startsWith('src/store/')) continue;
    const args = collectionArguments(textOf(m.path));
    if (args.length === 0) continue;
    const constants = new Map([...m.files.flatMap((f) => [...constantsOf(textOf(f))]), ...constantsOf(textOf(m.path))]);
    for (const arg of args) {
      const name = collectionName(arg, constants);
      if (name === null) unreadable.push(`${m.path}: collection(${arg})`);
      else byName.set(name, new Set([...(byName.get(name) ?? []), m.path]));
    }
  }
  return { byName, unreadable };
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
      specifiersOf(
        "import type {\n  A,\n  B,\n} from './a.ts';\nexport { C } from \"./c.ts\";\nimport './d.css';\nexport const e = 'from ./x';\nconst f = await import('./f.ts');",
      ),
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

describe('architecture: one owner per collection', () => {
  const modules = graph();
  const { byName, unreadable } = collectionOpens(modules);

  it('reads the opens it must see (so the rule below cannot pass on an empty list)', () => {
    assert.deepEqual([...(byName.get('users') ?? [])], ['src/identity/accounts.ts'], 'a typed literal');
    assert.ok(byName.get('actor_inbox')?.has('src/actors/wakeups-store.ts'), 'a change stream on a constant imported from another file');
    assert.ok(byName.get('rate_windows')?.has('src/billing/limits.ts'), 'an untyped literal');
    assert.ok(byName.has('blobs.files'), 'a template literal over a constant');
    assert.deepEqual(
      collectionArguments(
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text the reader parses holds a template literal
        "s.collection<{ a: Map<string, number> }>(\n  'x',\n); db.collection(`${B}.y`); this.store.watch?.(NAME, f); fs.watch(path); s.collection(name)",
      ),
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the argument as written, a template literal
      ["'x'", '`${B}.y`', 'NAME', 'name'],
    );
    assert.equal(collectionName('name', new Map()), null, 'a variable is not a name');
  });

  it('each collection is opened only by its owner, every collection has one, and every owner listed still opens it', () => {
    const violations = [...byName].flatMap(([name, openers]) => {
      const owner = OWNERS[name];
      if (owner === undefined) return [`${name}: opened by ${[...openers].join(', ')}, which has no owner in OWNERS`];
      return [...openers].filter((path) => !owns(owner, path)).map((path) => `${name}: opened by ${path}, owned by ${owner}`);
    });
    const stale = Object.keys(OWNERS)
      .filter((name) => !byName.has(name))
      .map((name) => `${name}: listed in OWNERS, opened by nobody`);
    assert.deepEqual([...violations, ...stale, ...unreadable.map((u) => `${u}: a name the rule cannot read`)], []);
  });
});

describe('architecture: test files that share a process', () => {
  const tests = sources('test').filter((path) => path.endsWith('.test.ts'));

  it('no test file registers a hook at its top level, and one that sets process.env restores it in a finally', () => {
    assert.ok(tests.length > 100, `${tests.length} test files`);
    const hooks = tests.filter((path) => /^(?:before|after|beforeEach|afterEach)\(/m.test(readFileSync(join(ROOT, path), 'utf8')));
    const env = tests.filter((path) => {
      const text = readFileSync(join(ROOT, path), 'utf8');
      return /\bprocess\.env\.\w+\s*=[^=]/.test(text) && !/\bfinally\b/.test(text);
    });
    assert.deepEqual({ hooks, env }, { hooks: [], env: [] });
  });
});

/**
 * The floors of src/ and machines/, lowest first. A module imports from its own floor or a lower
 * one; an import that runs upward is one of UPWARD below, each with its reason, or the test fails.
 */
const FLOORS: { name: string; holds: string[] }[] = [
  { name: 'foundation', holds: ['src/shared/', 'src/errors.ts', 'src/logger.ts', 'src/config.ts', 'src/config-callees.ts', 'src/types/', 'machines/'] },
  { name: 'state', holds: ['src/store/', 'src/blobs/'] },
  { name: 'speech', holds: ['src/speech/'] },
  { name: 'providers', holds: ['src/providers/'] },
  { name: 'accounts and money', holds: ['src/models/', 'src/identity/', 'src/billing/', 'src/metering/'] },
  { name: 'actors', holds: ['src/actors/'] },
  { name: 'capabilities', holds: ['src/text/', 'src/transcription/', 'src/realtime/', 'src/synthesis/', 'src/intent/', 'src/voice/', 'src/webhooks/'] },
  { name: 'edges', holds: ['src/http/', 'src/ws/', 'src/dashboard/', 'src/composition.ts', 'src/server.ts'] },
];

/** The imports allowed to run upward (at most 6), `from -> to`, each with why. */
const UPWARD: Record<string, string> = {
  // Types only: integer ids (`nextId`, owner of `counters`), fixed-window counters and newest-first
  // pages are written against the store port's interfaces; their users (identity, billing,
  // webhooks) stand above the store, and the helpers have no better floor of their own.
  'src/shared/common.ts -> src/store/port.ts': 'ids and window counters over the store port',
  'src/shared/pages.ts -> src/store/port.ts': 'pages over the store port',
};

const floorOf = (path: string): number => FLOORS.findIndex((f) => f.holds.some((h) => (h.endsWith('/') ? path.startsWith(h) : path === h)));

/** The import cycles (strongly connected components of more than one module, or a module importing itself). */
function cycles(modules: Map<string, Module>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of modules.get(v)?.files ?? []) {
      if (!modules.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || modules.get(v)!.files.includes(v)) found.push(component.sort());
    }
  };
  for (const v of modules.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('architecture: floors, cycles and sizes', () => {
  const modules = graph();

  it('finds a cycle and an upward import when there is one (so the rules below cannot pass on a blind reader)', () => {
    const m = (path: string, files: string[]): [string, Module] => [path, { path, files, packages: [] }];
    assert.deepEqual(cycles(new Map([m('a', ['b']), m('b', ['c']), m('c', ['a']), m('d', ['a'])])), [['a', 'b', 'c']]);
    assert.ok(floorOf('src/providers/x.ts') < floorOf('src/voice/x.ts'));
    assert.equal(floorOf('src/nowhere.ts'), -1);
  });

  it('every module of src/ and machines/ stands on a floor', () => {
    assert.deepEqual(
      [...modules.keys()].filter((path) => floorOf(path) === -1),
      [],
    );
  });

  it('no import cycle, type-only or not', () => {
    assert.deepEqual(cycles(modules), []);
  });

  it(`imports run down the floors (${FLOORS.map((f) => f.name).join(' → ')}), but for at most 6 named ones`, () => {
    const upward = [...modules.values()].flatMap((m) =>
      m.files.filter((to) => modules.has(to) && floorOf(to) > floorOf(m.path)).map((to) => `${m.path} -> ${to}`),
    );
    assert.deepEqual(upward.sort(), Object.keys(UPWARD).sort());
    assert.ok(upward.length <= 6, `${upward.length} upward imports`);
  });

  it('src/voice/ imports nothing from src/realtime/ or src/synthesis/: a call listens and speaks through the speech floor', () => {
    const violations = [...modules.values()]
      .filter((m) => m.path.startsWith('src/voice/'))
      .flatMap((m) => m.files.filter((to) => to.startsWith('src/realtime/') || to.startsWith('src/synthesis/')).map((to) => `${m.path} -> ${to}`));
    assert.deepEqual(violations, []);
  });

  it('no source file is over 450 lines', () => {
    const long = [...modules.keys()]
      .map((path) => ({ path, lines: readFileSync(join(ROOT, path), 'utf8').split('\n').length }))
      .filter((f) => f.lines > 451) // a file's last newline makes one more empty element
      .map((f) => `${f.path}: ${f.lines - 1} lines`);
    assert.deepEqual(long, []);
  });

  it('`as unknown as` at most 3 times in src/, each under a comment that says why', () => {
    const casts = sources('src').flatMap((path) => {
      const lines = readFileSync(join(ROOT, path), 'utf8').split('\n');
      return lines.flatMap((line, i) =>
        /\bas unknown as\b/.test(line)
          ? [{ at: `${path}:${i + 1}`, explained: /\/\/|\/\*|\*/.test(`${lines[i - 1] ?? ''}${line.split('as unknown as')[1]}`) }]
          : [],
      );
    });
    assert.ok(casts.length <= 3, casts.map((c) => c.at).join(', '));
    assert.deepEqual(
      casts.filter((c) => !c.explained).map((c) => c.at),
      [],
    );
  });
});
