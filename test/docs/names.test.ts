// The architecture page and the README's "Where things are" are how a newcomer finds the code, so
// what they name must exist: every path in backticks (`src/voice/service.ts`, `src/providers/{twilio,exotel}/`,
// `src/http/routes/*.ts`) is a file or folder of the checkout, and every symbol (`Meter`,
// `MeteredCall.settle`, `ActorRuntime.spawn`), in backticks or in a sequence diagram's messages, is
// declared in src/ or machines/ (a class, interface, type, function or constant; a member, as a
// method, property or field in the file that declares its owner). A diagram's `invoke name` names
// an invoked `src` of a machine. Inline code that is neither (a collection, a field, a value) is
// prose and not checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGES = ['docs/architecture.md', 'README.md'];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir))
    .sort()
    .flatMap((name) => {
      const path = `${dir}/${name}`;
      if (statSync(join(ROOT, path)).isDirectory()) return sources(path);
      return /\.tsx?$/.test(name) ? [path] : [];
    });
}

const CODE = new Map([...sources('src'), ...sources('machines')].map((path) => [path, readFileSync(join(ROOT, path), 'utf8')]));

/** `a/{b,c}/d` as `a/b/d` and `a/c/d`. */
function expand(path: string): string[] {
  const m = /\{([^{}]*)\}/.exec(path);
  if (!m) return [path];
  return m[1]!.split(',').flatMap((part) => expand(path.slice(0, m.index) + part + path.slice(m.index + m[0].length)));
}

/** Whether a path exists; a `*` in its last part matches any name. */
function pathExists(path: string): boolean {
  const clean = path.replace(/[/]$/, '').replace(/<[^<>/]+>/g, '*');
  if (!clean.includes('*')) return existsSync(join(ROOT, clean));
  const dir = clean.slice(0, clean.lastIndexOf('/'));
  if (dir.includes('*')) return readdirSync(join(ROOT, dir.slice(0, dir.indexOf('*')))).some((name) => pathExists(clean.replace(/^([^*]*)\*/, `$1${name}`)));
  const pattern = new RegExp(
    `^${clean
      .slice(clean.lastIndexOf('/') + 1)
      .replace(/[.]/g, '\\.')
      .replace(/\*/g, '.*')}$`,
  );
  return existsSync(join(ROOT, dir)) && readdirSync(join(ROOT, dir)).some((name) => pattern.test(name));
}

const PATH = /^(?:src|machines|test|bench|scripts|docs|config)\/[\w./{},*<>-]*$/;
const SYMBOL = /^([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(?:\.([a-zA-Z_$][\w$]*))?(?:\(\))?$/;

/** Where `name` is declared, or []. */
function declaring(name: string): string[] {
  const re = new RegExp(`\\b(?:class|interface|type|function|const|enum|let)\\s+${name}\\b`);
  return [...CODE].filter(([, text]) => re.test(text)).map(([path]) => path);
}

function symbolExists(owner: string, member: string | undefined): boolean {
  if (owner in globalThis) return true; // the platform's own (`Date`, `AbortSignal`, `Object.defineProperty`)
  const files = declaring(owner);
  if (files.length === 0) return false;
  if (member === undefined) return true;
  const re = new RegExp(
    `(?:^|[\\s.#])(?:async\\s+|get\\s+|static\\s+|readonly\\s+|private\\s+|protected\\s+|public\\s+)*${member.replace('$', '\\$')}\\s*(?:[(<:?=]|\\?:)`,
    'm',
  );
  return files.some((path) => re.test(CODE.get(path)!));
}

/** The backticked words of a page's prose and the `Owner.member` words of its diagrams. */
function named(markdown: string): { paths: string[]; symbols: string[]; invokes: string[] } {
  const fences = [...markdown.matchAll(/^```mermaid\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
  const inline = [...markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!.trim());
  const diagramSymbols = fences.flatMap((f) => [...f.matchAll(/\b([A-Z][a-z]+[A-Z][A-Za-z]*(?:\.[a-z][A-Za-z]*)?)\b/g)].map((m) => m[1]!));
  return {
    paths: inline.filter((t) => PATH.test(t)).flatMap(expand),
    symbols: [...inline.filter((t) => SYMBOL.test(t)), ...diagramSymbols],
    invokes: fences.flatMap((f) => [...f.matchAll(/: invoke (\w+)/g)].map((m) => m[1]!)),
  };
}

test('the checker reads names, and fails on a path or a symbol that is not there', () => {
  const found = named('`src/voice/{a,b}.ts` and `Meter.begin`, `wallets`\n```mermaid\nA->>B: MeteredCall.settle(x)\nM->>K: invoke finish\n```\n');
  assert.deepEqual(found, { paths: ['src/voice/a.ts', 'src/voice/b.ts'], symbols: ['Meter.begin', 'MeteredCall.settle'], invokes: ['finish'] });
  assert.ok(symbolExists('Meter', 'begin') && symbolExists('MeteredCall', 'settle'));
  assert.ok(!symbolExists('Meter', 'nothingByThisName') && !symbolExists('NoSuchClassHere', undefined));
  assert.ok(pathExists('src/http/routes/*.ts') && pathExists('src/providers/<vendor>/speak.ts') && !pathExists('src/nowhere.ts'));
  assert.ok(!pathExists('src/providers/<vendor>/nothing.ts'));
});

for (const page of PAGES) {
  test(`${page}: every path and symbol it names exists`, () => {
    const { paths, symbols, invokes } = named(readFileSync(join(ROOT, page), 'utf8'));
    assert.ok(paths.length > 10, `${paths.length} paths read`);
    const missing = [
      ...paths.filter((p) => !pathExists(p)).map((p) => `path ${p}`),
      ...symbols
        .filter((s) => {
          const [, owner, member] = SYMBOL.exec(s) ?? /^([A-Za-z]+)\.?(\w+)?$/.exec(s)!;
          return !symbolExists(owner!, member);
        })
        .map((s) => `symbol ${s}`),
      ...invokes
        .filter((name) => ![...CODE].some(([path, text]) => path.startsWith('machines/') && new RegExp(`src: '${name}'`).test(text)))
        .map((n) => `invoke ${n}`),
    ];
    assert.deepEqual([...new Set(missing)], []);
  });
}
