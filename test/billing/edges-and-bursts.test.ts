// Money at the edges, through the gateway on loopback against a fake OpenAI upstream: chat calls in
// flight across midnight UTC (the upstream holds them while the gateway's injected clock is moved
// past it) on keys with a daily token limit and a daily spend cap, and an organization's small
// wallet spent from four keys at once by 200 calls with a large max_tokens, JSON and streamed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, call, createKey, joinOrg, signup, startTestGateway, walkPages, type TestGateway } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import type { UsageRecordDoc } from '../../src/billing/usage.ts';

const PRICING = { input_cents_per_mtok: 150, output_cents_per_mtok: 600 }; // per token: 150 and 600 µ¢
const DAY_MS = 86_400_000;

describe('money at window edges and in bursts, over HTTP', () => {
  let gw: TestGateway;
  let up: FakeServer;
  let offset = 0; // the gateway's clock: the real one, moved forward by the tests
  const now = () => Date.now() + offset;

  before(async () => {
    up = await startOpenAIUpstream();
    gw = await startTestGateway({}, { now });
    const r = await call(gw.url, 'PUT', '/admin/models/chat-edge', {
      token: ADMIN_TOKEN,
      body: {
        type: 'llm',
        owned_by: 'test',
        context_window: 8192,
        max_output_tokens: 4096,
        pricing: PRICING,
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'k', upstream_model: 'gpt-up' }],
      },
    });
    assert.equal(r.status, 201, r.text);
  });
  after(async () => {
    await gw.destroy();
    await up.close();
  });

  const chat = (key: string, stream: boolean, maxTokens: number) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'chat-edge',
        messages: [{ role: 'user', content: 'tell me about the rivers of the world' }],
        max_tokens: maxTokens,
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      }),
    }).then(async (res) => ({ status: res.status, headers: res.headers, text: await res.text() }));

  /** The usage a 200 reported (the JSON body's, or the stream's usage chunk). */
  function usageOf(r: { text: string }): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
    if (!r.text.startsWith('data:')) return JSON.parse(r.text).usage;
    assert.ok(r.text.includes('data: [DONE]'), r.text);
    const frames = r.text.split('\n\n').filter((f) => f.startsWith('data: {'));
    return JSON.parse(frames.at(-1)!.slice(6)).usage;
  }

  /** Every usage record the account's owner sees, once there are at least `want` (they trail by a flush). */
  async function records(token: string, want: number): Promise<any[]> {
    for (let i = 0; i < 200; i++) {
      const { items } = await walkPages(gw.url, '/portal/usage/records?limit=100', token);
      if (items.length >= want) return items;
      await sleep(20);
    }
    assert.fail(`fewer than ${want} usage records appeared`);
  }

  /** A limit window's count in the store (rate_windows: `<type>:<key id>/<period>@<start>`). */
  async function windowCount(type: string, keyId: number, dayStart: number): Promise<number> {
    const doc = await gw.store.collection('rate_windows').findOne({ _id: `${type}:${keyId}/86400@${dayStart}` });
    return (doc?.count as number | undefined) ?? 0;
  }

  /** A window's count once the usage flush has settled into it what its calls used (records are readable a moment before). */
  async function settledCount(type: string, keyId: number, dayStart: number, want: number): Promise<number> {
    let count = await windowCount(type, keyId, dayStart);
    for (let i = 0; i < 100 && count !== want; i++) {
      await sleep(20);
      count = await windowCount(type, keyId, dayStart);
    }
    return count;
  }

  it('chat calls in flight across midnight UTC: never past the daily token limit or spend cap, each counted once, in the day it began', async () => {
    const u = await signup(gw.url);
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 10_000 } })).status, 201);
    const tpd = await createKey(gw.url, u.token, { name: 'tokens', tpd: 150 });
    const cpd = await createKey(gw.url, u.token, { name: 'spend', cpd: 1 });
    // The gateway's clock at 23:59:30 UTC; the upstream holds every call until the test lets it answer.
    const midnight = Math.ceil(now() / DAY_MS) * DAY_MS;
    offset += midnight - 30_000 - now();
    let release!: () => void;
    up.defaultBehaviour = { until: new Promise<void>((resolve) => (release = resolve)) };
    const seen = up.calls('/v1/chat/completions').length;
    let refusedSoFar = 0;
    const send = (key: string, stream: boolean, maxTokens: number) =>
      chat(key, stream, maxTokens).then((r) => {
        if (r.status !== 200) refusedSoFar++;
        return r;
      });
    // A call reserves its prompt and max_tokens: on the token key (40 each) one or two fit in 150
    // tokens, never three; on the spend key (1,000 each at 600 µ¢) one fits in 1 ¢ at a time.
    const calls = Promise.all([
      Promise.all(Array.from({ length: 8 }, (_, i) => send(tpd.api_key, i % 2 === 1, 40))),
      Promise.all(Array.from({ length: 8 }, (_, i) => send(cpd.api_key, i % 2 === 1, 1000))),
    ]);
    // Every call is refused or waiting on the upstream: midnight passes while those run.
    while (up.calls('/v1/chat/completions').length - seen + refusedSoFar < 16) await sleep(10);
    assert.ok(now() < midnight, 'every call was admitted before midnight');
    offset += 31_000;
    release();
    const [onTokens, onSpend] = await calls;
    up.defaultBehaviour = {};
    const answered = [...onTokens, ...onSpend].filter((r) => r.status === 200).length;
    await records(u.token, answered); // flushed
    for (const [key, results, limit, max] of [
      [tpd, onTokens, 'tpd', 150],
      [cpd, onSpend, 'cpd', 1_000_000],
    ] as const) {
      const ok = results.filter((r) => r.status === 200);
      const refused = results.filter((r) => r.status === 429);
      assert.equal(ok.length + refused.length, results.length, results.map((r) => `${r.status} ${r.text.slice(0, 200)}`).join('\n'));
      assert.ok(ok.length > 0 && refused.length > 0, `${limit}: ${ok.length} answered, ${refused.length} refused`);
      for (const r of refused) assert.equal(r.headers.get(`x-ratelimit-limit-${limit}`), limit === 'tpd' ? '150' : '1', r.text);
      // Each call's record says when its hold was taken (its window) and when it ended.
      const recs = (await gw.store.collection<UsageRecordDoc>('usage_records').find({ key_prefix: key.prefix }, { limit: 100 })).map((r) => ({
        heldAt: r.held_at ?? Number.NaN,
        endedAt: r.ts.getTime(),
        used: limit === 'tpd' ? (r.prompt_tokens ?? 0) + (r.completion_tokens ?? 0) : r.cost_uc,
      }));
      assert.equal(recs.length, ok.length);
      assert.ok(
        recs.every((r) => r.heldAt < midnight && r.endedAt > midnight),
        'every answered call was in flight across midnight',
      );
      if (limit === 'tpd') {
        const reported = ok.map(usageOf).reduce((s, x) => s + x.total_tokens, 0);
        assert.equal(
          recs.reduce((s, r) => s + r.used, 0),
          reported,
        );
      }
      const used = recs.reduce((s, r) => s + r.used, 0);
      assert.ok(used <= max, `${limit}: ${used} used: never past the limit of ${max}`);
      assert.equal(await settledCount(limit, key.id, midnight - DAY_MS, used), used, `${limit}: the day the calls began counts them`);
      assert.equal(await windowCount(limit, key.id, midnight), 0, `${limit}: the new day does not`);
      const next = await chat(key.api_key, false, 10);
      assert.equal(next.status, 200, next.text);
      assert.equal(next.headers.get(`x-ratelimit-used-${limit}`), '0', 'the new day starts empty');
    }
  });

  it("an organization's small wallet spent from four keys at once by 200 calls (max_tokens 4096, JSON and streamed): never below zero, nothing left held, the records match the ledger to the µ¢", async () => {
    const owner = await signup(gw.url);
    const org = await call(gw.url, 'POST', '/portal/org', { token: owner.token, body: { name: 'Burst' } });
    assert.equal(org.status, 201, org.text);
    const members = [await signup(gw.url), await signup(gw.url), await signup(gw.url)];
    for (const m of members) await joinOrg(gw.url, owner.token, m);
    const keys = await Promise.all([owner, ...members].map((m) => createKey(gw.url, m.token)));
    const FUNDS = 5_000_000; // 5 ¢: a call holds its prompt and 4,096 tokens (about 2.5 ¢), so two at a time
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { org_id: org.body.id, amount_cents: 5 } })).status, 201);
    up.defaultBehaviour = { delayMs: 5 }; // calls overlap

    const balances: number[] = [];
    let bursting = true;
    const watch = (async () => {
      while (bursting) {
        balances.push((await call(gw.url, 'GET', '/portal/wallet', { token: owner.token })).body.balance_microcents);
        await sleep(5);
      }
    })();
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => chat(keys[i % 4]!.api_key, i % 2 === 1, 4096).then((r) => ({ ...r, key: i % 4 }))));
    up.defaultBehaviour = {};
    bursting = false;
    await watch;

    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    assert.equal(ok.length + refused.length, 200, [...new Set(results.map((r) => `${r.status} ${r.text.slice(0, 200)}`))].join('\n'));
    assert.ok(ok.length > 0 && refused.length > 0, `${ok.length} answered, ${refused.length} refused`);
    for (const r of refused) assert.equal(JSON.parse(r.text).error.code, 'insufficient_credit');
    for (const r of ok) usageOf(r); // every answer, streamed or not, finished with its usage
    assert.ok(balances.length > 0 && balances.every((b) => b >= 0), `balances seen during the burst: ${balances.join(',')}`);

    const recs = (await records(owner.token, ok.length)).filter((rec) => rec.status === 'ok');
    assert.equal(recs.length, ok.length, 'one record per answered call');
    for (const [i, k] of keys.entries()) {
      assert.equal(recs.filter((rec) => rec.key_prefix === k.prefix).length, ok.filter((r) => r.key === i).length, `key ${i}: a record per answered call`);
    }
    const w = (await call(gw.url, 'GET', '/portal/wallet', { token: owner.token })).body;
    const spent = recs.reduce((s, rec) => s + rec.cost_microcents, 0);
    assert.ok(w.balance_microcents >= 0);
    assert.equal(w.held_cents, 0, 'nothing left held');
    assert.equal(w.available_cents, w.balance_cents);
    assert.equal(w.balance_microcents, FUNDS - spent, 'the wallet moved by exactly what the records say');
  });
});
