// The README is the front door and the rest of the documentation hangs off it by relative links:
// every relative link in README.md, SECURITY.md, bench/README.md and docs/**/*.md must name a file
// that exists, and a `#fragment` on a Markdown file must name one of its headings (GitHub's anchors:
// lower case, punctuation dropped, spaces as hyphens, -1, -2 for repeats). External links (a scheme
// such as https:) are not fetched. Code blocks and inline code are skipped: a path in backticks is
// prose, not a link.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function markdownUnder(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return markdownUnder(path);
      return name.endsWith('.md') ? [path] : [];
    });
}

const FILES = [join(ROOT, 'README.md'), join(ROOT, 'SECURITY.md'), join(ROOT, 'bench', 'README.md'), ...markdownUnder(join(ROOT, 'docs'))];

/** The text without fenced code blocks and inline code (kept as blanks, so nothing joins up). */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '``');
}

/** Link and image targets: `[text](target)` and `![alt](target)`, the text possibly over several lines. */
function targets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

/** GitHub's anchors for a Markdown file's headings. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = m[1]!.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .trim()
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

test('the documentation files this test reads exist', () => {
  for (const file of FILES) assert.ok(existsSync(file), `${relative(ROOT, file)} is missing`);
  assert.ok(FILES.length >= 15, `only ${FILES.length} Markdown files found`);
});

test('every relative link in the documentation resolves', () => {
  const broken: string[] = [];
  for (const file of FILES) {
    const text = readFileSync(file, 'utf8');
    for (const target of targets(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: ...
      const [pathPart, fragment] = target.split('#', 2) as [string, string | undefined];
      const path = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
      const where = `${relative(ROOT, file)}: (${target})`;
      if (!existsSync(path)) {
        broken.push(`${where} names ${relative(ROOT, path)}, which does not exist`);
        continue;
      }
      if (fragment && path.endsWith('.md') && !anchors(readFileSync(path, 'utf8')).has(fragment)) {
        broken.push(`${where}: ${relative(ROOT, path)} has no heading with the anchor #${fragment}`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test('every page under docs/ is reachable from the README in one click', () => {
  const readme = join(ROOT, 'README.md');
  const linked = new Set(
    targets(readFileSync(readme, 'utf8'))
      .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith('#'))
      .map((t) => resolve(ROOT, decodeURIComponent(t.split('#')[0]!))),
  );
  const unlinked = FILES.filter((f) => f !== readme && !linked.has(f)).map((f) => relative(ROOT, f));
  assert.deepEqual(unlinked, [], 'pages the README does not link to');
});
