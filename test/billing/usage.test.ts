// Usage records and rollups: every field of a record, buffered writes that trail by one flush
// interval and are never lost on close, summaries from the rollups, newest-first cursor paging.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { call, facts, fixture, fund, org, principal, user, walletOf, type Fixture } from './helpers.ts';

describe('usage', () => {
  let fx: Fixture;
  before(async () => {
    fx = await fixture(Date.UTC(2026, 2, 10, 23, 59, 0));
  });
  after(() => fx.close());

  /** A billing service, and an organization of an owner and a member with a funded wallet. */
  async function fundedOrg() {
    const b = await fx.billing();
    const owner = await user(fx.store);
    const member = await user(fx.store);
    await org(fx.store, owner, [member]);
    const [pOwner, pMember] = [await b.payerFor(principal(owner)), await b.payerFor(principal(member))];
    await fund(fx.store, pOwner.walletId, 1e9);
    return { b, owner, member, pOwner, pMember };
  }

  it('records each request with its account, member, key, model, route, units, cost, status and latency', async () => {
    const b = await fx.billing({ usageFlushIntervalMs: 60_000 });
    const owner = await user(fx.store);
    const member = await user(fx.store);
    const o = await org(fx.store, owner, [member]);
    const p = principal(member);
    const payer = await b.payerFor(p);
    await fund(fx.store, payer.walletId, 1e9);
    const hold = await b.hold(payer, 5_000, 'req_abc');
    await b.settle(hold, payer, {
      ...facts(1234.4, { requestId: 'req_abc', model: 'voice-1', modelType: 'stt', route: 'voice-1#1', latencyMs: 87.6 }),
      promptTokens: undefined,
      completionTokens: undefined,
      seconds: 12.5,
    });
    const failed = await b.hold(payer, 5_000, 'req_def');
    await b.release(failed, payer, facts(0, { requestId: 'req_def', route: null, status: 'upstream_failed' }));
    assert.equal(await fx.store.collection('usage_records').countDocuments({ owner: `org:${o}` }), 0, 'buffered until the flush');
    await b.close(); // close writes what is buffered
    const rows = await fx.store.collection('usage_records').find({ owner: `org:${o}` }, { sort: { _id: 1 } });
    assert.equal(rows.length, 2);
    const { _id, ts, batch, ...rest } = rows[0]!;
    assert.equal(typeof _id, 'string');
    assert.equal(typeof batch, 'string', 'the batch that wrote it');
    assert.equal((ts as Date).getTime(), fx.clock.t);
    assert.deepEqual(rest, {
      request_id: 'req_abc',
      owner: `org:${o}`,
      owner_type: 'org',
      owner_id: o,
      user_id: member,
      key_id: p.keyId,
      key_prefix: p.prefix,
      model: 'voice-1',
      model_type: 'stt',
      route: 'voice-1#1',
      seconds: 12.5,
      cost_uc: 1234,
      status: 'ok',
      latency_ms: 88,
      held_at: fx.clock.t, // its key's limit windows: its hold's
    });
    assert.deepEqual([rows[1]!.status, rows[1]!.cost_uc, rows[1]!.route], ['upstream_failed', 0, null]);
    // Written, so out of the wallet's outbox (where each settle put its record with the debit).
    const w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.usage_outbox, w.usage_pending], [[], undefined]);
    assert.equal(await fx.store.collection('usage_batches').countDocuments({}), 0);
  });

  it('writes buffered records within the flush interval without being asked', async () => {
    const b = await fx.billing({ usageFlushIntervalMs: 50 });
    b.start();
    const u = await user(fx.store);
    const payer = await b.payerFor(principal(u));
    await fund(fx.store, payer.walletId, 1e9);
    await call(b, payer, 100, 10);
    await sleep(300);
    assert.equal(await fx.store.collection('usage_records').countDocuments({ owner: payer.walletId }), 1);
  });

  it('summarizes from the rollups by day, model, key prefix and member; members see only their own', async () => {
    const b = await fx.billing();
    const owner = await user(fx.store);
    const member = await user(fx.store);
    const o = await org(fx.store, owner, [member]);
    const [kOwner, kMember] = [principal(owner), principal(member)];
    const [pOwner, pMember] = [await b.payerFor(kOwner), await b.payerFor(kMember)];
    await fund(fx.store, pOwner.walletId, 1e9);
    await call(b, pOwner, 10_000_000, 1_000_000, { model: 'a', promptTokens: 100, completionTokens: 50 }); // 2026-03-10
    await call(b, pMember, 10_000_000, 2_000_000, { model: 'b', promptTokens: 10, completionTokens: 5 });
    fx.clock.t += 2 * 60_000; // past midnight: 2026-03-11
    await call(b, pMember, 10_000_000, 3_000_000, { model: 'a', promptTokens: 1, completionTokens: 1, status: 'client_closed' });
    await b.flush();

    const byDay = await b.usageSummary(owner, { from: '2026-03-10', to: '2026-03-11', group_by: 'day' });
    assert.deepEqual(
      byDay.data.map((r) => [r.day, r.requests, r.total_tokens, r.cost_cents]),
      [
        ['2026-03-10', 2, 165, 3],
        ['2026-03-11', 1, 2, 3],
      ],
    );
    assert.deepEqual(
      [byDay.scope, byDay.owner_type, byDay.owner_id, byDay.totals.requests, byDay.totals.errors, byDay.totals.cost_microcents],
      ['account', 'org', o, 3, 1, 6_000_000],
    );
    const byModel = await b.usageSummary(owner, { from: '2026-03-10', to: '2026-03-11', group_by: 'model' });
    assert.deepEqual(
      byModel.data.map((r) => [r.model, r.requests, r.cost_microcents]),
      [
        ['a', 2, 4_000_000],
        ['b', 1, 2_000_000],
      ],
    );
    const byKey = await b.usageSummary(owner, { from: '2026-03-10', to: '2026-03-11', group_by: 'key_prefix' });
    assert.deepEqual(
      byKey.data.map((r) => [r.key_prefix, r.requests]).sort(),
      [
        [kMember.prefix, 2],
        [kOwner.prefix, 1],
      ].sort(),
    );
    const byMember = await b.usageSummary(owner, { from: '2026-03-10', to: '2026-03-11', group_by: 'member' });
    assert.deepEqual(
      byMember.data.map((r) => [r.user_id, r.requests]),
      [
        [owner, 1],
        [member, 2],
      ],
    );
    // A member's own view, whatever the grouping.
    const mine = await b.usageSummary(member, { from: '2026-03-10', to: '2026-03-11', group_by: 'member' });
    assert.deepEqual([mine.scope, mine.data.map((r) => [r.user_id, r.requests])], ['member', [[member, 2]]]);
    const mineByDay = await b.usageSummary(member, { from: '2026-03-10', to: '2026-03-11' });
    assert.deepEqual(
      mineByDay.data.map((r) => [r.day, r.requests]),
      [
        ['2026-03-10', 1],
        ['2026-03-11', 1],
      ],
    );
    // The range is inclusive and by UTC day.
    const oneDay = await b.usageSummary(owner, { from: '2026-03-11', to: '2026-03-11', group_by: 'model' });
    assert.deepEqual(
      oneDay.data.map((r) => [r.model, r.requests]),
      [['a', 1]],
    );
    // Someone else's account sees none of it.
    const stranger = await user(fx.store);
    assert.equal((await b.usageSummary(stranger, { from: '2026-03-10', to: '2026-03-11' })).totals.requests, 0);
    assert.equal((await b.usageRecords(stranger, {})).data.length, 0);
  });

  it("summarizes by the client's end user: attributed calls only, per account, members their own", async () => {
    const { b, owner, member, pOwner, pMember } = await fundedOrg();
    const day = new Date(fx.clock.t).toISOString().slice(0, 10);
    await call(b, pOwner, 10_000_000, 1_000_000, { endUser: 'alice@example.com' });
    await call(b, pMember, 10_000_000, 2_000_000, { endUser: 'alice@example.com' });
    await call(b, pMember, 10_000_000, 4_000_000, { endUser: 'bob', status: 'upstream_failed' });
    await call(b, pMember, 10_000_000, 8_000_000); // no end user named
    const stranger = await user(fx.store);
    const pStranger = await b.payerFor(principal(stranger));
    await fund(fx.store, pStranger.walletId, 1e9);
    await call(b, pStranger, 10_000_000, 16_000_000, { endUser: 'alice@example.com' });
    await b.flush();

    const all = await b.usageSummary(owner, { from: day, to: day, group_by: 'end_user' });
    assert.deepEqual(
      all.data.map((r) => [r.end_user, r.requests, r.errors, r.cost_microcents]),
      [
        ['alice@example.com', 2, 0, 3_000_000],
        ['bob', 1, 1, 4_000_000],
      ],
    );
    assert.equal(all.totals.cost_microcents, 7_000_000, 'totals cover the attributed calls; another account’s alice is not ours');
    assert.equal((await b.usageSummary(owner, { from: day, to: day, group_by: 'day' })).totals.cost_microcents, 15_000_000, 'the other views count every call');
    const mine = await b.usageSummary(member, { from: day, to: day, group_by: 'end_user' });
    assert.deepEqual(
      [mine.scope, mine.data.map((r) => [r.end_user, r.requests])],
      [
        'member',
        [
          ['alice@example.com', 1],
          ['bob', 1],
        ],
      ],
    );
    const records = (await b.usageRecords(owner, {})).data;
    assert.deepEqual(
      records.map((r) => String(r.end_user)).sort(),
      ['alice@example.com', 'alice@example.com', 'bob', 'null'],
      'each record names its end user, or null',
    );
  });

  it('pages records newest first with a cursor; members page only their own', async () => {
    const { b, owner, member, pOwner, pMember } = await fundedOrg();
    for (let i = 0; i < 7; i++) {
      fx.clock.t += 1000;
      await call(b, i % 3 === 0 ? pOwner : pMember, 100, 10, { requestId: `req_${i}` });
    }
    await b.flush();
    const seen: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 10; page++) {
      const res = await b.usageRecords(owner, { limit: 3, ...(after ? { after } : {}) });
      seen.push(...res.data.map((r) => r.request_id));
      if (!res.has_more) {
        assert.equal(res.next_after, null);
        break;
      }
      after = res.next_after!;
    }
    assert.deepEqual(seen, ['req_6', 'req_5', 'req_4', 'req_3', 'req_2', 'req_1', 'req_0']);
    const mine = await b.usageRecords(member, { limit: 100 });
    assert.deepEqual(
      mine.data.map((r) => r.request_id),
      ['req_5', 'req_4', 'req_2', 'req_1'],
    );
    assert.ok(mine.data.every((r) => r.user_id === member));
  });

  it('agrees with its records: every grouping of any UTC range sums to the records of those days (the dashboard shows both)', async () => {
    const { b, owner, member, pOwner, pMember } = await fundedOrg();
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    // 120 calls over ~10 days at uneven hours, around UTC midnights, by both members, several models.
    for (let i = 0; i < 120; i++) {
      fx.clock.t += rand(3 * 3_600_000) + 1;
      await call(b, rand(2) === 0 ? pOwner : pMember, 10_000_000, 1 + rand(5_000_000), {
        model: ['a', 'b', 'c'][rand(3)],
        promptTokens: rand(500),
        completionTokens: rand(200),
        ...(rand(3) === 0 ? { endUser: `eu${rand(4)}` } : {}),
        ...(rand(10) === 0 ? { status: 'upstream_error' } : {}),
      });
    }
    await b.flush();
    const records: {
      created_at: string;
      cost_microcents: number;
      prompt_tokens: number | null;
      completion_tokens: number | null;
      status: string;
      end_user: string | null;
      user_id: number;
    }[] = [];
    for (let after: string | undefined, more = true; more; ) {
      const page = await b.usageRecords(owner, { limit: 100, ...(after ? { after } : {}) });
      records.push(...page.data);
      more = page.has_more;
      after = page.next_after ?? undefined;
    }
    assert.ok(records.length >= 120);
    const days = [...new Set(records.map((r) => r.created_at.slice(0, 10)))].sort();
    for (const [from, to] of [
      [days[0]!, days.at(-1)!],
      [days[2]!, days[5]!],
      [days[4]!, days[4]!],
    ] as const) {
      const inRange = records.filter((r) => r.created_at.slice(0, 10) >= from && r.created_at.slice(0, 10) <= to);
      const expect = (rs: typeof records) => ({
        requests: rs.length,
        errors: rs.filter((r) => r.status !== 'ok').length,
        cost_microcents: rs.reduce((n, r) => n + r.cost_microcents, 0),
        total_tokens: rs.reduce((n, r) => n + (r.prompt_tokens ?? 0) + (r.completion_tokens ?? 0), 0),
      });
      const pick = (t: Record<string, number>) => ({
        requests: t.requests,
        errors: t.errors,
        cost_microcents: t.cost_microcents,
        total_tokens: t.total_tokens,
      });
      for (const group_by of ['day', 'model', 'key_prefix', 'member'] as const) {
        const summary = await b.usageSummary(owner, { from, to, group_by });
        assert.deepEqual(pick(summary.totals as unknown as Record<string, number>), expect(inRange), `${group_by} ${from}..${to}: totals`);
        const summed = summary.data.reduce((n, row) => n + row.cost_microcents, 0);
        assert.equal(summed, summary.totals.cost_microcents, `${group_by}: the rows add up to the totals`);
      }
      const byDay = await b.usageSummary(owner, { from, to, group_by: 'day' });
      for (const row of byDay.data) {
        assert.deepEqual(pick(row as unknown as Record<string, number>), expect(inRange.filter((r) => r.created_at.startsWith(row.day!))), `day ${row.day}`);
      }
      const byEndUser = await b.usageSummary(owner, { from, to, group_by: 'end_user' });
      assert.deepEqual(
        pick(byEndUser.totals as unknown as Record<string, number>),
        expect(inRange.filter((r) => r.end_user !== null)),
        'end users: attributed calls only',
      );
      const mine = await b.usageSummary(member, { from, to, group_by: 'model' });
      assert.deepEqual(pick(mine.totals as unknown as Record<string, number>), expect(inRange.filter((r) => r.user_id === member)), "a member's own");
    }
  });

  it('refuses malformed or too wide ranges', async () => {
    const b = await fx.billing();
    const u = await user(fx.store);
    for (const q of [{ from: '2026-02-30' }, { from: '2026-03-12', to: '2026-03-11' }, { from: '2024-01-01', to: '2026-01-01' }, { to: '26-01-01' }]) {
      await assert.rejects(b.usageSummary(u, q), (e: unknown) => (e as { code?: string }).code === 'invalid_request', JSON.stringify(q));
    }
  });
});
