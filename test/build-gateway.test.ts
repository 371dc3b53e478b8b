// scripts/build-gateway.mjs: the bundle's source map keeps no mapping into node_modules, and a stack
// frame in a package's code is left unmapped (the bundle's line), not named after the last of our
// files above it in the bundle (issue 39: a capacity refusal's stack pointed into the wrong file).
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { decode, encode } from '@jridgewell/sourcemap-codec';
// @ts-expect-error: a plain ES module of the scripts, without types
import { dropPackageMappings } from '../scripts/build-gateway.mjs';

describe("the gateway bundle's source map", () => {
  it("drops the packages' mappings: a frame in a package is unmapped, a frame of ours names its own file", async () => {
    // A bundle of four lines: ours (a.ts), a package over two lines, ours again (b.ts), the package and ours on one line.
    const sources = ['../src/a.ts', '../node_modules/pkg/index.js', '../src/b.ts'];
    const mappings = encode([
      [
        [0, 0, 10, 0],
        [8, 0, 10, 8],
      ],
      [
        [0, 1, 1, 0],
        [6, 1, 1, 6],
      ],
      [[2, 1, 2, 2]],
      [
        [0, 2, 5, 0],
        [20, 1, 9, 0],
        [30, 2, 6, 0],
      ],
    ]);
    const dir = await mkdtemp(join(tmpdir(), 'gw-map-'));
    try {
      const path = join(dir, 'server.js.map');
      await writeFile(path, JSON.stringify({ version: 3, sources, names: [], mappings }));
      await dropPackageMappings(path);
      const payload = JSON.parse(await readFile(path, 'utf8'));
      const kept = decode(payload.mappings);
      assert.ok(
        kept.flat().every((s) => s.length === 1 || s[1] !== 1),
        `no mapping into node_modules is left: ${JSON.stringify(kept)}`,
      );
      const map = new SourceMap(payload);
      const at = (line: number, column: number) => map.findEntry(line, column) as { originalSource?: string; originalLine?: number };
      for (const [line, column] of [
        [1, 3],
        [2, 40],
        [3, 25],
      ] as const) {
        assert.equal(at(line, column).originalSource, undefined, `the package's code at ${line}:${column} is unmapped`);
      }
      assert.deepEqual([at(0, 9).originalSource, at(0, 9).originalLine], ['../src/a.ts', 10]);
      assert.deepEqual([at(3, 5).originalSource, at(3, 5).originalLine], ['../src/b.ts', 5]);
      assert.deepEqual([at(3, 31).originalSource, at(3, 31).originalLine], ['../src/b.ts', 6]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
