// The embedded store's fast paths against mingo, the reference for MongoDB's semantics: on seeded
// random documents, filters and updates, whenever a fast path answers, it answers as mingo does.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Query, update as mingoUpdate } from 'mingo';
import { fastMatcher, fastUpdate } from '../../src/store/embedded/fastpath.ts';
import type { Doc } from '../../src/store/port.ts';
import { mulberry32 } from '../../src/intent/classifier.ts';

const VALUES: unknown[] = [
  0,
  1,
  -1,
  2.5,
  7,
  1e15,
  'a',
  'b',
  '',
  'A',
  true,
  false,
  null,
  NaN,
  Infinity,
  [1, 2],
  ['a', 'b'],
  [],
  [[1]],
  [7, 'a', null],
  [NaN],
  { x: 1 },
  new Date(0),
];
const SCALARS: unknown[] = [0, 1, -1, 2.5, 7, 'a', 'b', '', true, false];
const FIELDS = ['a', 'b', 'c'];
const FILTER_OPS = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte'];
const UPDATE_OPS = ['$set', '$inc', '$unset', '$push', '$pull'];

function generator(seed: number) {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const doc = (): Doc => {
    const d: Doc = { _id: pick(['x', 'y', 1]) as string };
    for (const f of FIELDS) if (rnd() < 0.75) d[f] = structuredClone(pick(VALUES));
    return d;
  };
  const filter = (): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const f of [...FIELDS, '_id']) {
      if (rnd() < 0.5) continue;
      if (rnd() < 0.4) {
        out[f] = pick(rnd() < 0.9 ? SCALARS : VALUES);
      } else {
        const cond: Record<string, unknown> = {};
        for (let i = 0; i < 1 + Math.floor(rnd() * 2); i++) cond[pick(FILTER_OPS)] = pick(rnd() < 0.8 ? SCALARS : VALUES);
        out[f] = cond;
      }
    }
    return out;
  };
  const upd = (): Record<string, Record<string, unknown>> => {
    const out: Record<string, Record<string, unknown>> = {};
    for (let i = 0; i < 1 + Math.floor(rnd() * 3); i++) {
      const op = pick(UPDATE_OPS);
      const operand =
        op === '$inc'
          ? pick([0, 1, -2, 0.5, 'a', null])
          : op === '$pull' && rnd() < 0.3
            ? { $in: Array.from({ length: Math.floor(rnd() * 12) }, () => pick(rnd() < 0.9 ? SCALARS : VALUES)) }
            : pick(rnd() < 0.8 ? SCALARS : VALUES);
      (out[op] ??= {})[pick(FIELDS)] = structuredClone(operand);
    }
    return out;
  };
  return { doc, filter, upd };
}

describe('embedded store fast paths', () => {
  it('match as mingo does wherever they answer', () => {
    const gen = generator(7);
    let answered = 0;
    for (let i = 0; i < 20_000; i++) {
      const filter = gen.filter();
      const doc = gen.doc();
      const test = fastMatcher(filter);
      const fast = test?.(doc);
      if (fast === undefined) continue;
      answered++;
      assert.equal(fast, new Query(filter).test(doc), `filter ${JSON.stringify(filter)} on ${JSON.stringify(doc)}`);
    }
    // The comparison must have run on most cases, or this test would pass by answering nothing.
    assert.ok(answered > 8_000, `answered ${answered}`);
  });

  it('update as mingo does wherever they apply, and leave the document untouched otherwise', () => {
    const gen = generator(11);
    let applied = 0;
    for (let i = 0; i < 20_000; i++) {
      const spec = gen.upd();
      const original = gen.doc();
      const fastDoc = structuredClone(original);
      const fast = fastUpdate(fastDoc, spec);
      if (fast === undefined) {
        assert.deepEqual(fastDoc, original);
        continue;
      }
      applied++;
      const ref = structuredClone(original);
      const changed = mingoUpdate(ref, spec as never).length > 0;
      const what = `${JSON.stringify(spec)} on ${JSON.stringify(original)}`;
      assert.deepEqual(fastDoc, ref, what);
      assert.deepEqual(Object.keys(fastDoc), Object.keys(ref), `field order: ${what}`);
      assert.equal(fast, changed, `changed: ${what}`);
    }
    assert.ok(applied > 5_000, `applied ${applied}`);
  });

  it('cover the wallet hold and settle shapes', () => {
    const wallet: Doc = { _id: 'user:1', balance_uc: 5000, held_uc: 0, holds: [] };
    assert.equal(fastMatcher({ _id: 'user:1', balance_uc: { $gte: 1000 } })?.(wallet), true);
    assert.equal(fastUpdate(wallet, { $inc: { balance_uc: -1000, held_uc: 1000 }, $push: { holds: 'h1 1000' } }), true);
    assert.equal(fastMatcher({ _id: 'user:1', holds: 'h1 1000' })?.(wallet), true);
    assert.equal(fastUpdate(wallet, { $inc: { balance_uc: 800, held_uc: -1000 }, $pull: { holds: 'h1 1000' } }), true);
    assert.deepEqual(wallet, { _id: 'user:1', balance_uc: 4800, held_uc: 0, holds: [] });
    assert.equal(fastMatcher({ _id: 'user:1', holds: 'h1 1000' })?.(wallet), false);
  });
});
