// The evaluation summary (src/intent/evaluate.ts) counts the caller's group labels: a label is
// data, whatever its name, and never reaches Object.prototype.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OUT_OF_SCOPE, summarize, type TurnScore } from '../../src/intent/evaluate.ts';
import type { CascadeResult } from '../../src/intent/engine.ts';

const score = (group: string, outcome: TurnScore['outcome']): TurnScore => ({
  text: 't',
  gold: OUT_OF_SCOPE,
  group,
  outcome,
  said: OUT_OF_SCOPE,
  result: {} as CascadeResult,
  ms: 1,
});

describe('summarize', () => {
  it('counts groups named like Object.prototype members as own keys, leaving the prototype alone', () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    try {
      const s = summarize([
        score('__proto__', 'right'),
        score('__proto__', 'wrong'),
        score('constructor', 'right'),
        score('toString', 'right'),
        score('hi-IN', 'wrong'),
      ]);
      assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), before);
      assert.deepEqual(Object.keys(s.by_group).sort(), ['__proto__', 'constructor', 'hi-IN', 'toString']);
      assert.deepEqual(Object.getOwnPropertyDescriptor(s.by_group, '__proto__')?.value, { turns: 2, right: 1 });
      assert.deepEqual(s.by_group.constructor, { turns: 1, right: 1 });
      assert.deepEqual(s.by_group['hi-IN'], { turns: 1, right: 0 });
      // The JSON a client reads keeps them too.
      assert.deepEqual(Object.keys(JSON.parse(JSON.stringify(s)).by_group).sort(), ['__proto__', 'constructor', 'hi-IN', 'toString']);
    } finally {
      // The old code wrote these onto Object.prototype; leave nothing behind for other tests.
      for (const k of Object.getOwnPropertyNames(Object.prototype)) if (!before.includes(k)) delete (Object.prototype as Record<string, unknown>)[k];
    }
  });
});
