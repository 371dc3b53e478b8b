// docs/configuration.md documents every configuration key, and only those: a key added to the schema
// without a line there (or a line left behind for a key the schema dropped) fails here, as does a
// documented default that is not config/default.json's, or an environment override that the docs
// and loadConfig disagree about.
//
// What counts as a key: the schema's properties walked recursively; an object's key is not a key of
// its own, its properties are (`auth.argon2.memoryCost`, not `auth.argon2`). An array is one key,
// whatever its items: `http.trustProxy` and `intent.packs` (strings), and also `billing.plans` and
// `models`, whose items are objects with fields of their own. Those fields are described on the
// array's line (plans) or on the page the line links to (models take what `PUT /admin/models/{id}`
// takes, documented in docs/api/models-and-routes.md), not as `models.routes.provider` and so on:
// they are data shapes, not settings one overrides one by one.
//
// How the doc writes a key: a table row under the heading "## Every setting" whose first cell is
// the dotted path in backticks and whose second cell is the default (`| `http.maxJsonDepth` | `64` |
// ... |`), or a cell starting with "—" where the default file has none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ConfigSchema } from '../../src/config.ts';

const ROOT = new URL('../../', import.meta.url);
const DOC = readFileSync(new URL('docs/configuration.md', ROOT), 'utf8');
const DEFAULTS = JSON.parse(readFileSync(new URL('config/default.json', ROOT), 'utf8')) as Record<string, unknown>;

interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
}

/** The schema's keys as dotted paths: objects are walked into, everything else (arrays included) is a key. */
function schemaKeys(node: SchemaNode, at = ''): string[] {
  if (node.type === 'object' && node.properties) {
    return Object.entries(node.properties).flatMap(([name, child]) => schemaKeys(child, at ? `${at}.${name}` : name));
  }
  return [at];
}

interface Row {
  key: string;
  defaultCell: string;
  rest: string;
}

/** The rows of the "## Every setting" section (up to the next level-2 heading). */
function documentedRows(): Row[] {
  const start = DOC.indexOf('\n## Every setting\n');
  assert.ok(start >= 0, 'docs/configuration.md has no "## Every setting" section');
  const after = DOC.slice(start + 1);
  const end = after.indexOf('\n## ', 1);
  const section = end >= 0 ? after.slice(0, end) : after;
  const rows: Row[] = [];
  for (const line of section.split('\n')) {
    const m = /^\|\s*`([^`]+)`\s*\|([^|]*)\|(.*)\|\s*$/.exec(line);
    if (m) rows.push({ key: m[1]!, defaultCell: m[2]!.trim(), rest: m[3]! });
  }
  return rows;
}

function valueAt(obj: Record<string, unknown>, path: string): unknown {
  let at: unknown = obj;
  for (const part of path.split('.')) {
    if (at === null || typeof at !== 'object' || !Object.hasOwn(at, part)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/** loadConfig's environment overrides, read from its ENV table in src/config.ts: name → config path. */
function envOverrides(): Map<string, string> {
  const source = readFileSync(new URL('src/config.ts', ROOT), 'utf8');
  const table = /const ENV[^=]*= \{([\s\S]*?)\n\};/.exec(source);
  assert.ok(table, 'src/config.ts no longer has its `const ENV = {...}` table; update this test to read the overrides');
  const out = new Map<string, string>();
  for (const m of table[1]!.matchAll(/^\s*([A-Z][A-Z0-9_]*): \['([\w.]+)', '(?:int|string|bool)'\],?$/gm)) out.set(m[1]!, m[2]!);
  assert.ok(out.size >= 10, `read only ${out.size} environment overrides from src/config.ts; has the ENV table changed shape?`);
  return out;
}

test('every configuration key of the schema is in docs/configuration.md, and nothing else is', () => {
  const inSchema = new Set(schemaKeys(ConfigSchema as SchemaNode));
  const rows = documentedRows();
  const documented = rows.map((r) => r.key);
  assert.deepEqual(
    documented.filter((k, i) => documented.indexOf(k) !== i),
    [],
    'keys documented twice',
  );
  assert.deepEqual(
    [...inSchema].filter((k) => !documented.includes(k)),
    [],
    'configuration keys missing from docs/configuration.md ("## Every setting")',
  );
  assert.deepEqual(
    documented.filter((k) => !inSchema.has(k)),
    [],
    'keys documented in docs/configuration.md that the config schema does not have',
  );
});

test("the documented defaults are config/default.json's", () => {
  for (const { key, defaultCell } of documentedRows()) {
    const value = valueAt(DEFAULTS, key);
    if (value === undefined) {
      assert.ok(defaultCell.startsWith('—'), `${key}: config/default.json has no default, but the doc says ${defaultCell}`);
      continue;
    }
    // Arrays of objects (plans, models) are described in words; everything else is written as its value.
    if (Array.isArray(value) && value.some((v) => v !== null && typeof v === 'object')) continue;
    const expected = typeof value === 'string' && value !== '' ? value : JSON.stringify(value);
    const written = /^`([^`]*)`/.exec(defaultCell)?.[1];
    assert.equal(written, expected, `${key}: the doc's default is ${defaultCell}, config/default.json's is ${expected}`);
  }
});

test("every environment override is documented, in the variables table and on its key's line", () => {
  const env = envOverrides();
  const head = DOC.slice(0, DOC.indexOf('\n## Every setting\n'));
  const tabled = [...head.matchAll(/^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|/gm)].map((m) => m[1]!);
  assert.deepEqual(
    [...env.keys()].filter((name) => !tabled.includes(name)),
    [],
    'overrides missing from the variables table',
  );
  assert.deepEqual(
    tabled.filter((name) => !env.has(name)),
    [],
    'variables in the table that loadConfig does not read',
  );
  const rows = new Map(documentedRows().map((r) => [r.key, r.rest]));
  for (const [name, path] of env) {
    assert.ok(rows.get(path)?.includes(`Env \`${name}\``), `the line of ${path} should say "Env \`${name}\`"`);
  }
  for (const [key, rest] of rows) {
    for (const m of rest.matchAll(/Env `([A-Z][A-Z0-9_]*)`/g)) {
      assert.equal(env.get(m[1]!), key, `${key} says it is overridden by ${m[1]}, which loadConfig maps to ${env.get(m[1]!) ?? 'nothing'}`);
    }
  }
});
