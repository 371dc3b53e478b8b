// kill -9 of the gateway while a call's analysis waits on its llm (src/voice/analysis.ts): the
// call ended and was charged; its actor is in `analyzing` with the analysis's hold taken (a
// custodial hold, a once-only step) and the upstream request in flight. The restarted gateway
// (same data dir, same INSTANCE_ID) restores the actor, asks again on the same hold and settles it
// once: the wallet pays the call and one chat call, one usage record of the chat model, nothing
// left held, `call.analyzed` once; a third start changes nothing.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { exited, launch, type Launched } from '../gateway-process.ts';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import { startReceiver } from '../webhooks/receiver.ts';
import { waitFor } from '../actors/helpers.ts';
import { ended, waitForCall } from './helpers.ts';

describe('a call analysis across kill -9', () => {
  it('pending when the gateway is killed: done after the restart, billed once, call.analyzed once', async () => {
    const llm = await startOpenAIUpstream();
    const receiver = await startReceiver();
    const dir = await mkdtemp(join(tmpdir(), 'gw-analysis-crash-'));
    const configFile = join(dir, 'config.json');
    // Answers, keys two digits (the callee's turns), hangs up: a short call with a conversation.
    const callee = {
      to: '*',
      answer: 'answer',
      ring_ms: 100,
      steps: [{ silence_ms: 300 }, { dtmf: '42', gap_ms: 50 }, { silence_ms: 1200 }, { hangup: true }],
    };
    const config = {
      voice: { analysisBackoffMs: 50, simulator: { callees: [callee] } },
      webhooks: { allowPrivateNetworks: true, allowHttp: true, sweepIntervalMs: 200 },
    };
    await writeFile(configFile, JSON.stringify(config));
    const env = { ADMIN_TOKEN, INSTANCE_ID: 'analysis-crash-node', CONFIG_FILE: configFile };
    const data = join(dir, 'data');
    let gw: Launched = await launch(data, { runCode: true, env });
    try {
      const chat = {
        type: 'llm',
        owned_by: 'test',
        pricing: { input_cents_per_mtok: 1000, output_cents_per_mtok: 2000 },
        routes: [{ provider: 'openai', base_url: `${llm.url}/v1`, upstream_model: 'gpt-test' }],
      };
      assert.equal((await call(gw.url, 'PUT', '/admin/models/chat-test', { token: ADMIN_TOKEN, body: chat })).status, 201);
      const u = await signup(gw.url);
      const key = (await createKey(gw.url, u.token)).api_key;
      assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100 } })).status, 201);
      assert.equal((await call(gw.url, 'POST', '/portal/webhooks', { token: u.token, body: { url: receiver.url, events: ['call.analyzed'] } })).status, 201);
      const balance = async () => (await call(gw.url, 'GET', '/portal/wallet', { token: u.token })).body as { balance_microcents: number; held_cents: number };
      const before = (await balance()).balance_microcents;

      // The first request hangs: the analysis is pending when the gateway dies.
      llm.next({ hang: true }, { reply: JSON.stringify({ summary: 'The callee keyed 42.', fields: { digits: '42' } }) });
      const analysis = { model: 'chat-test', fields: [{ name: 'digits', type: 'string', description: 'The keys the callee pressed' }] };
      const placed = await call(gw.url, 'POST', '/v1/voice/call', { token: key, body: { model: 'voice-local', to: '+919800000001', analysis } });
      assert.equal(placed.status, 202, placed.text);
      const id = placed.body.id as string;
      await waitFor('the analysis asked upstream', () => llm.calls('/v1/chat/completions').length === 1, 30_000);
      const pending = (await call(gw.url, 'GET', `/v1/voice/calls/${id}`, { token: key })).body;
      assert.ok(ended(pending), JSON.stringify(pending));
      assert.equal(pending.analysis.status, 'pending');
      assert.ok((await balance()).held_cents > 0, "the analysis's hold");
      gw.child.kill('SIGKILL');
      await exited(gw.child);

      gw = await launch(data, { runCode: true, env });
      const c = await waitForCall(gw, key, id, (x) => x.analysis?.status !== 'pending', 20_000);
      assert.equal(c.analysis.status, 'completed', JSON.stringify(c.analysis));
      assert.deepEqual([c.analysis.summary, c.analysis.fields], ['The callee keyed 42.', { digits: '42' }]);
      assert.equal(c.status, 'completed', "the call's own outcome is untouched");
      assert.equal(llm.calls('/v1/chat/completions').length, 2, 'asked again once after the restart');
      const analysisMicrocents = Math.round(c.analysis.cost_cents * 1e6);
      assert.ok(analysisMicrocents > 0);
      const records = async () =>
        ((await call(gw.url, 'GET', '/portal/usage/records?limit=100', { token: u.token })).body.data as any[]).filter((r) => r.model === 'chat-test');
      await waitFor('the chat usage record', async () => (await records()).length >= 1, 5_000);
      await waitFor('call.analyzed delivered', () => receiver.received.some((r) => r.json.call_id === id), 10_000);
      await sleep(500);
      const after = await balance();
      // voice-local's 1 cent a minute charges whole µ¢ rounded up; the analysis's prices are whole µ¢ a token.
      const callMicrocents = Math.ceil((c.billed_seconds * 1e6) / 60);
      assert.equal(before - after.balance_microcents, callMicrocents + analysisMicrocents, 'the call and one chat call');
      assert.equal(after.held_cents, 0, 'nothing left held');
      const billed = await records();
      assert.equal(billed.length, 1, JSON.stringify(billed));
      assert.equal(billed[0].cost_microcents, analysisMicrocents);

      // Once: a clean restart finds nothing more to do or charge.
      gw.child.kill('SIGTERM');
      await exited(gw.child);
      gw = await launch(data, { runCode: true, env });
      await sleep(800);
      assert.equal((await balance()).balance_microcents, after.balance_microcents);
      assert.equal(llm.calls('/v1/chat/completions').length, 2);
      assert.equal(receiver.received.filter((r) => r.json.call_id === id).length, 1, 'call.analyzed once');
    } finally {
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      await llm.close();
      await receiver.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
