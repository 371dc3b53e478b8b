// scripts/test-groups.mjs: which test files share a process, and when each process starts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
// @ts-expect-error: a plain ES module of the scripts, without types
import { coreShare, nextToStart, planProcesses } from '../scripts/test-groups.mjs';

type Planned = { files: string[]; seconds: number; cpu: number };

describe('test processes', () => {
  it('short files share a process by folder up to 30 s, a long one runs alone, longest first', () => {
    const durations = {
      'test/a/1.test.ts': [12, 10],
      'test/a/2.test.ts': [12, 10],
      'test/a/3.test.ts': [12, 10],
      'test/b/long.test.ts': [45, 7],
      'test/b/short.test.ts': [1, 1],
    };
    const plan = planProcesses(
      '/r',
      Object.keys(durations).map((f) => `/r/${f}`),
      durations,
    ) as Planned[];
    assert.deepEqual(
      plan.map((p) => [p.files.map((f) => f.slice(8)), p.seconds]),
      [
        [['b/long.test.ts'], 45],
        [['a/1.test.ts', 'a/2.test.ts'], 24],
        [['a/3.test.ts'], 12],
        [['b/short.test.ts'], 1],
      ],
    );
  });

  it("a process starts when its share of a core fits beside the running ones', the longest that fits", () => {
    const busy = { files: [], seconds: 20, cpu: 20 }; // a whole core
    const waiting = { files: [], seconds: 45, cpu: 4.5 }; // a tenth of one
    assert.equal(coreShare(busy), 1);
    assert.equal(coreShare(waiting), 0.1);
    const limits = { cores: 3, maxProcesses: 8 };
    assert.equal(nextToStart([busy], [], limits), 0, 'nothing running: the first');
    assert.equal(nextToStart([busy, waiting], [busy, busy], limits), 0);
    assert.equal(nextToStart([busy, waiting], [busy, busy, busy], limits), -1, 'three cores full');
    assert.equal(nextToStart([busy, waiting], [busy, busy, waiting], limits), 1, 'a busy one does not fit; the waiting one does');
    assert.equal(nextToStart([waiting], Array(8).fill(waiting), limits), -1, 'at most maxProcesses');
    assert.equal(nextToStart([], [], limits), -1);
  });
});
