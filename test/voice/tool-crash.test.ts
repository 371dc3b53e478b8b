// kill -9 of the gateway while a call's tool request waits for the integrator's answer (issue 41
// §5, test/voice/crash.test.ts shows the set-up): the request went out, its answer can never be
// recorded. The restarted gateway finalizes the orphaned call (gateway_restart) and records the
// request on its transcript as a `tool` turn with status `interrupted` (src/voice/tool-journal.ts),
// once, before call.ended; the integrator deduplicates by its tool_call_id.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { exited, type Launched } from '../gateway-process.ts';
import { call } from '../helper.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import { hang, startReceiver } from '../webhooks/receiver.ts';
import { waitFor } from '../actors/helpers.ts';
import { ended, waitForCall } from './helpers.ts';
import { crashGateway } from './crash-gateway.ts';

describe('a tool request across kill -9', () => {
  it('is on the restarted call’s transcript as interrupted, once', async () => {
    const llm = await startOpenAIUpstream();
    const receiver = await startReceiver(hang); // takes the request, never answers
    // A callee that answers, keys 42 (the LLM agent's turn: it calls the tool) and stays on the line.
    const callee = { to: '*', answer: 'answer', ring_ms: 100, steps: [{ silence_ms: 500 }, { dtmf: '42#', gap_ms: 50 }] };
    const defaults = JSON.parse(readFileSync(new URL('../../config/default.json', import.meta.url), 'utf8')) as { models: unknown[] };
    const chat = {
      id: 'chat-test',
      type: 'llm',
      owned_by: 'test',
      pricing: { input_cents_per_mtok: 1, output_cents_per_mtok: 1 },
      routes: [{ provider: 'openai', base_url: `${llm.url}/v1`, upstream_model: 'gpt-test' }],
    };
    const config = {
      models: [...defaults.models, chat],
      voice: { simulator: { callees: [callee] } },
      webhooks: { allowPrivateNetworks: true, allowHttp: true },
    };
    const g = await crashGateway('gw-voice-tool-crash-', 'voice-tool-crash', config);
    let gw: Launched = g.gw;
    const key = g.key;
    try {
      const hook = await call(gw.url, 'POST', '/portal/webhooks', { token: g.user.token, body: { url: receiver.url, events: ['call.ended'] } });
      assert.equal(hook.status, 201, hook.text);
      const body = {
        model: 'voice-local',
        to: '+919800000001',
        agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Be brief.' },
        first_message: { mode: 'wait_for_callee' },
        tools: [{ type: 'function', function: { name: 'get_balance', parameters: { type: 'object' } } }],
        tool_url: receiver.url,
        tool_timeout_ms: 15_000,
        webhook_id: hook.body.id,
      };
      const placed = await call(gw.url, 'POST', '/v1/voice/call', { token: key, body });
      assert.equal(placed.status, 202, placed.text);
      const id = placed.body.id as string;
      const asked = () => receiver.received.filter((r) => r.headers['x-service-event'] === 'call.tool');
      await waitFor('the tool request reached the integrator', () => asked().length === 1, 20_000);
      gw.child.kill('SIGKILL');
      await exited(gw.child);

      gw = await g.relaunch();
      const c = await waitForCall(gw, key, id, ended, 15_000);
      assert.deepEqual([c.status, c.end_reason], ['completed', 'gateway_restart'], JSON.stringify(c));
      const tools = c.transcript.filter((t: { role: string }) => t.role === 'tool');
      assert.equal(tools.length, 1, JSON.stringify(c.transcript));
      const [turn] = tools;
      assert.deepEqual(
        [turn.text, turn.tool.id, turn.tool.name, turn.tool.status, turn.tool.status_code, turn.tool.error],
        ['get_balance: interrupted', asked()[0]!.json.tool_call_id, 'get_balance', 'interrupted', null, 'gateway_restart'],
      );
      assert.equal(c.transcript.at(-1), turn, 'after the turns recorded before the kill');
      assert.ok(turn.start >= c.transcript.at(-2).start, JSON.stringify(c.transcript));
      // Once: a clean restart records nothing more.
      gw.child.kill('SIGTERM');
      await exited(gw.child);
      gw = await g.relaunch();
      await sleep(500);
      const again = (await call(gw.url, 'GET', `/v1/voice/calls/${id}`, { token: key })).body;
      assert.deepEqual(again.transcript, c.transcript);
    } finally {
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      await receiver.close();
      await llm.close();
      await rm(g.dir, { recursive: true, force: true });
    }
  });
});
