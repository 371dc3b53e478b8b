// An upstream that breaks after the first chunk of a streamed answer, each way it can (issue 42): its
// connection reset, an error in the stream (a 500 mid-body), a frame that is not JSON, silence past
// the stream's idle timeout. Through HTTP, on chat completions and on Responses: the client gets the
// in-stream error (chat's error frame, no [DONE]; Responses' `error` then `response.failed`, no
// `response.completed`), the upstream request is let go, and the call is billed by the one rule of
// docs/api/billing.md: `upstream_failed`, for the output the client received, and the wallet moves
// by exactly the record's cost.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { type FakeBehaviour, startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';

const PRICING = { input_cents_per_mtok: 150, output_cents_per_mtok: 600 }; // per token: 150 and 600 µ¢
const IDLE_MS = 400;

const BREAKS: [string, FakeBehaviour][] = [
  ['its connection reset', { closeAfterChunks: 4 }],
  ['an error in the stream (a 500 mid-body)', { errorAfterChunks: 4 }],
  ['a frame that is not JSON', { malformedAfterChunks: 4 }],
  [`silence past the ${IDLE_MS} ms idle timeout`, { hangAfterChunks: 4 }],
];

describe('an upstream that breaks mid-stream', () => {
  let gw: TestGateway;
  let up: FakeServer;
  before(async () => {
    up = await startOpenAIUpstream();
    gw = await startTestGateway({ upstream: { streamIdleTimeoutMs: IDLE_MS } });
    const r = await call(gw.url, 'PUT', '/admin/models/chat-break', {
      token: ADMIN_TOKEN,
      body: {
        type: 'llm',
        owned_by: 'test',
        context_window: 4096,
        max_output_tokens: 512,
        pricing: PRICING,
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, upstream_model: 'gpt-up' }],
      },
    });
    assert.equal(r.status, 201, r.text);
  });
  after(async () => {
    await gw?.destroy();
    await up?.close();
  });

  async function account() {
    const s = await signup(gw.url);
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100 } })).status, 201);
    return { ...s, key: (await createKey(gw.url, s.token)).api_key as string };
  }

  /** The call's usage record, once written (records trail the calls by a flush). */
  async function recordOf(token: string, requestId: string) {
    for (let i = 0; i < 100; i++) {
      const rows: Record<string, any>[] = (await call(gw.url, 'GET', '/portal/usage/records?limit=100', { token })).body.data;
      const row = rows.find((r) => r.request_id === requestId);
      if (row) return row;
      await new Promise((r) => setTimeout(r, 30));
    }
    return assert.fail(`no usage record for ${requestId}`);
  }

  /** Billed as the rule says: upstream_failed, some output and no more than what arrived, the wallet moved by the cost. */
  async function assertBilled(u: { token: string }, requestId: string, received: string) {
    const rec = await recordOf(u.token, requestId);
    assert.equal(rec.status, 'upstream_failed', JSON.stringify(rec));
    assert.ok(rec.completion_tokens > 0, `the output received is billed: ${JSON.stringify(rec)}`);
    assert.ok(rec.completion_tokens <= received.split(/\s+/).length + 2, `no more than received ("${received}"): ${JSON.stringify(rec)}`);
    assert.equal(rec.cost_microcents, rec.prompt_tokens * PRICING.input_cents_per_mtok + rec.completion_tokens * PRICING.output_cents_per_mtok);
    const wallet = (await call(gw.url, 'GET', '/portal/wallet', { token: u.token })).body;
    assert.equal(wallet.balance_microcents, 100_000_000 - rec.cost_microcents, 'the wallet moved by exactly the cost');
    assert.equal(wallet.held_cents, 0, 'nothing left held');
  }

  const post = (key: string, path: string, body: unknown) =>
    fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  for (const [how, behaviour] of BREAKS) {
    it(`chat completions, ${how}: the error frame ends the stream, no [DONE]; the upstream let go; billed for what arrived`, async () => {
      const u = await account();
      up.next(behaviour);
      const t0 = Date.now();
      const res = await post(u.key, '/v1/chat/completions', {
        model: 'chat-break',
        messages: [{ role: 'user', content: 'tell me a long story about the sea and the rivers' }],
        stream: true,
      });
      assert.equal(res.status, 200);
      const events = (await res.text())
        .split('\n\n')
        .filter(Boolean)
        .map((e) => e.replace(/^data: /, ''));
      assert.ok(Date.now() - t0 < IDLE_MS + 3000, 'ended promptly');
      assert.ok(!events.includes('[DONE]'), 'no [DONE] after a failure');
      const last = JSON.parse(events.at(-1)!);
      assert.equal(last.error.code, 'model_unavailable', JSON.stringify(last));
      const received = events
        .slice(0, -1)
        .map((e) => JSON.parse(e).choices[0]?.delta.content ?? '')
        .join('');
      assert.ok(received.length > 0, 'content arrived before the break');
      const upstreamCall = up.calls('/v1/chat/completions').at(-1)!;
      await upstreamCall.ended;
      await assertBilled(u, res.headers.get('x-request-id')!, received);
    });

    it(`Responses, ${how}: error then response.failed end the stream, no response.completed; billed for what arrived`, async () => {
      const u = await account();
      up.next(behaviour);
      const res = await post(u.key, '/v1/responses', { model: 'chat-break', input: 'tell me a long story about the sea and the rivers', stream: true });
      assert.equal(res.status, 200);
      const events = (await res.text())
        .split('\n\n')
        .filter(Boolean)
        .map((e) =>
          JSON.parse(
            e
              .split('\n')
              .find((l) => l.startsWith('data: '))!
              .slice(6),
          ),
        );
      const types = events.map((e) => e.type);
      assert.ok(!types.includes('response.completed') && !types.includes('response.incomplete'), types.join(','));
      assert.deepEqual(types.slice(-2), ['error', 'response.failed'], types.join(','));
      const [error, failed] = events.slice(-2);
      assert.equal(error.code, 'model_unavailable');
      assert.equal(failed.response.status, 'failed');
      assert.deepEqual(failed.response.error, { code: 'server_error', message: error.message }, "OpenAI's code for it");
      assert.equal(failed.response.id, events[0].response.id);
      assert.deepEqual(
        events.map((e) => e.sequence_number),
        events.map((_, i) => i),
        'sequence numbers run on through the failure',
      );
      const received = events
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join('');
      assert.ok(received.length > 0, 'content arrived before the break');
      await up.calls('/v1/chat/completions').at(-1)!.ended;
      await assertBilled(u, res.headers.get('x-request-id')!, received);
    });
  }
});
