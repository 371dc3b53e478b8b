// What a gateway start loads: not the MongoDB driver on the embedded store, nor the libraries only
// some requests use (the tokenizer, the date and phone readers of intent entities, the MFCCs of
// diarization, transliteration); each is loaded when first needed. Every gateway start, and each of
// the test processes that start one, would otherwise pay for them (~0.5 s of CPU).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { call, startTestGateway, type TestGateway } from './helper.ts';

const LAZY = ['gpt-tokenizer', 'chrono-node', 'libphonenumber-js', 'meyda', '@indic-transliteration/sanscript'];
const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** Which of `packages` this process has loaded as CommonJS (a CommonJS package imported as ESM is too). */
const loaded = (packages: string[]) => {
  const paths = Object.keys(createRequire(import.meta.url).cache);
  return packages.filter((p) => paths.some((path) => path.includes(`/node_modules/${p}/`)));
};

describe('a gateway start', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
    assert.equal((await call(gw.url, 'GET', '/healthz')).status, 200);
  });
  after(() => gw.destroy());

  it('loads the MongoDB driver only when a MongoDB URL is configured', () => {
    assert.deepEqual(loaded(['mongodb']), []);
  });

  it('loads the tokenizer, chrono-node, libphonenumber-js, meyda and sanscript at their first use', () => {
    assert.deepEqual(loaded(LAZY), []);
    // The first three also have ES module builds, which an `import` would load out of require's
    // sight: src/ names them in type imports only.
    const eager = new RegExp(`^import (?!type )[^;]*from '(${LAZY.join('|')})(/[^']*)?';`, 'm');
    const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((f) => /\.tsx?$/.test(f));
    assert.deepEqual(
      files.filter((f) => eager.test(readFileSync(join(SRC, f), 'utf8'))),
      [],
    );
  });
});
