import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planQuery, type PlannableIndex } from '../../src/store/embedded/plan.ts';
import { AFTER, TAG } from '../../src/store/embedded/keys.ts';

const index = (name: string, fields: string[], opts: Partial<PlannableIndex> = {}): PlannableIndex => ({
  name,
  fields,
  sparse: false,
  unique: false,
  ...opts,
});

const byOrgAt = index('org_1_at_-1', ['org', 'at']);
const byCreated = index('createdAt_1', ['createdAt']);

describe('embedded query planner', () => {
  it('looks documents up by _id for equality and $in', () => {
    assert.deepEqual(planQuery({ _id: 'a', x: 1 }, undefined, [byOrgAt]), { kind: 'ids', ids: ['a'], ordered: false, exact: false });
    assert.deepEqual(planQuery({ _id: { $in: ['a', 2, 1, 2] } }, undefined, []), { kind: 'ids', ids: [1, 2, 'a'], ordered: false, exact: true });
    assert.equal(planQuery({ _id: { $in: [1, /x/] } }, undefined, []).kind, 'scan');
  });

  it('walks an equality prefix plus a range, in the sort direction', () => {
    const since = new Date(1000);
    const plan = planQuery({ org: 'o', at: { $gte: since } }, { at: -1 }, [byCreated, byOrgAt]);
    assert.deepEqual(plan, {
      kind: 'index',
      index: byOrgAt,
      range: { lo: [TAG.string, 'o', TAG.date, 1000], hi: [TAG.string, 'o', TAG.date + 1] },
      reverse: true,
      ordered: true,
      exact: false,
    });
    const forward = planQuery({ org: 'o' }, { org: 1, at: 1, _id: 1 }, [byOrgAt]);
    assert.deepEqual(forward.kind === 'index' && [forward.range, forward.reverse, forward.ordered], [
      { lo: [TAG.string, 'o'], hi: [TAG.string, 'o', AFTER] },
      false,
      true,
    ]);
  });

  it('marks a plan exact only when the lookup decides the whole filter', () => {
    const byJti = index('jti_1', ['jti'], { unique: true });
    const exact = (f: Record<string, unknown>, idx: PlannableIndex[] = [byJti, byOrgAt]) => planQuery(f, undefined, idx).exact === true;
    assert.equal(exact({ _id: 7 }), true);
    assert.equal(exact({ _id: 7, user_id: 3 }), false, 'another field still needs testing');
    assert.equal(exact({ _id: { $in: [7, 8] } }), true);
    assert.equal(exact({ _id: { $in: [7], $ne: 7 } }), false, 'another operator on _id still needs testing');
    assert.equal(exact({ _id: { $eq: 7, $gt: 9 } }), false);
    assert.equal(exact({ $and: [{ _id: 7 }, { user_id: 3 }] }), false, 'an $and clause still needs testing');
    assert.equal(exact({ jti: 'abc' }), true);
    assert.equal(exact({ jti: 'abc', user_id: 3 }), false);
    assert.equal(exact({ jti: 'abc', $or: [{ a: 1 }] }), false);
    assert.equal(exact({ jti: { $eq: 'abc' } }), false, 'only plain values');
    assert.equal(exact({ org: 'o', at: 5 }), false, 'numbers also match Dates stored as epoch ms in keys');
    assert.equal(exact({ org: 'o' }), true, 'an equality prefix of a compound index');
    assert.equal(exact({ org: null }), false, 'null also matches a missing field');
    assert.equal(exact({ org: 'o', at: { $gte: new Date(0) } }), false);
  });

  it('keeps an index for filtering but not for ordering when directions are mixed', () => {
    const plan = planQuery({ org: 'o' }, { at: 1, cost: -1 }, [byOrgAt]);
    assert.equal(plan.kind, 'index');
    assert.equal(plan.ordered, false);
  });

  it('uses an index for a sort alone, and never a sparse one for that', () => {
    const plan = planQuery({}, { createdAt: -1 }, [byCreated]);
    assert.deepEqual(plan.kind === 'index' && [plan.index.name, plan.reverse, plan.ordered], ['createdAt_1', true, true]);
    const sparse = index('code_1', ['code'], { sparse: true });
    assert.equal(planQuery({}, { code: 1 }, [sparse]).kind, 'scan');
    assert.equal(planQuery({ code: null }, undefined, [sparse]).kind, 'scan');
    assert.equal(planQuery({ code: 'x' }, undefined, [sparse]).kind, 'index');
  });

  it('prefers a unique index pinned on all its fields', () => {
    const unique = index('hash_1', ['hash'], { unique: true });
    const plan = planQuery({ org: 'o', hash: 'h' }, undefined, [byOrgAt, unique]);
    assert.equal(plan.kind === 'index' && plan.index.name, 'hash_1');
  });

  it('scans for $or and unindexed fields, in _id order when asked', () => {
    assert.deepEqual(planQuery({ $or: [{ org: 'a' }, { org: 'b' }] }, undefined, [byOrgAt]), {
      kind: 'scan',
      reverse: false,
      ordered: true,
    });
    assert.deepEqual(planQuery({ cost: 3 }, { _id: -1 }, [byOrgAt]), { kind: 'scan', reverse: true, ordered: true });
    assert.deepEqual(planQuery({ cost: 3 }, { cost: 1 }, [byOrgAt]), { kind: 'scan', reverse: false, ordered: false });
  });
});
