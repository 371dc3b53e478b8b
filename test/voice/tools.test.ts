// The agent acts during the call (issue 41 §5), through the simulator over real sockets, against an
// integrator of our own on loopback that checks every request's signature with its webhook's
// secret, as an integrator would: an LLM agent's tool call (the fake OpenAI upstream streams it in
// the chat-completions wire format) and the demo pack's CREATE_DISPUTE reach it while the call goes
// on, a holding line plays meanwhile, and the answer is the agent's next turn; a request it refuses
// (a forged signature) or does not answer in time is said politely and the call goes on. Every
// request and answer is a `tool` turn; `call.action` per action and `call.ended` with the
// transcript and outcome arrive; the requests cost nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { call } from '../helper.ts';
import { waitFor } from '../actors/helpers.ts';
import { startReceiver, verify, type Receiver } from '../webhooks/receiver.ts';
import { ended, voiceAccount, waitForCall, walletMicrocents, type VoiceAccount } from './helpers.ts';
import { CALLEES, simulatedVoice } from './simulated.ts';
import { gatewayWording } from '../../src/voice/tools.ts';

const LLM_AGENT = { agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Be brief.' }, first_message: { mode: 'wait_for_callee' } };
const BALANCE_TOOL = {
  type: 'function',
  function: { name: 'get_balance', description: "The callee's balance", parameters: { type: 'object', properties: { query: { type: 'string' } } } },
};
const APOLOGY = gatewayWording('failed', 'en-IN');
// The demo pack's own wordings (GEN.HOLD, GEN.ACTION_FAILED): said on its calls instead of the gateway's.
const PACK_HOLD = 'One moment please, I am checking that for you.';
const PACK_FAILED = 'Sorry, I could not complete that just now. Is there anything else I can help with?';
const DISPUTE = CALLEES.find((c) => c.to === '+919800000010')!;

/** An integrator: tool requests answered by `tool` once their signature verifies with `secret` (else 401); events recorded. */
function integrator(receiver: Receiver, secret: () => string, tool: (body: any, res: ServerResponse) => void): void {
  receiver.set((req: IncomingMessage, res: ServerResponse, n: number) => {
    const got = receiver.received[n - 1]!;
    if (!verify(secret(), got.raw, req.headers['x-service-signature'])) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return void res.end('{"error":"bad signature"}');
    }
    if (req.headers['x-service-event'] !== 'call.tool') return void res.writeHead(204).end();
    tool(got.json, res);
  });
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

describe('the agent acts during the call: signed requests to the integrator, answered into the next turn', () => {
  const v = simulatedVoice([
    // Asks, listens to the holding line and to the answer, hangs up.
    {
      to: '+919800000030',
      answer: 'answer',
      ring_ms: 100,
      steps: [{ silence_ms: 300 }, { say: 'what is my balance' }, { wait_agent: 'done', ms: 1500 }, { hangup: true }],
    },
    // The demo dispute (CALLEES' +919800000010), then the holding line and what the action's answer chose.
    { ...DISPUTE, to: '+919800000031', steps: [...DISPUTE.steps.slice(0, -2), { wait_agent: 'done', ms: 1500 }, { hangup: true }] },
  ]);

  async function hook(who: VoiceAccount, url: string): Promise<{ id: number; secret: string }> {
    const res = await call(v.gw.url, 'POST', '/portal/webhooks', { token: who.session, body: { url, events: ['call.action', 'call.ended'] } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  /** An account with a webhook to `receiver`, which answers tool requests with `tool` once they verify with the webhook's secret. */
  async function integratorAccount(receiver: Receiver, tool: (body: any, res: ServerResponse) => void) {
    const who = await voiceAccount(v.gw, 1000);
    const { id: webhookId, secret } = await hook(who, receiver.url);
    integrator(receiver, () => secret, tool);
    return { who, webhookId, secret };
  }

  const events = (r: Receiver, callId: string, event: string) => r.received.filter((x) => x.json.call_id === callId && x.json.event === event);
  const toolRequests = (r: Receiver, callId: string) => r.received.filter((x) => x.headers['x-service-event'] === 'call.tool' && x.json.call_id === callId);

  it("an LLM's streamed tool call reaches the integrator signed; the holding line plays; the answer is its next reply; events carry it; the call costs its seconds only", async () => {
    const receiver = await startReceiver();
    try {
      const { who, webhookId, secret } = await integratorAccount(receiver, (_body, res) => json(res, 200, { balance: '500 rupees' }));
      const before = await walletMicrocents(v.gw, who.session);
      v.stt.say('what is my balance');
      const chats = v.llm.calls('/v1/chat/completions').length;
      const res = await v.dial('+919800000030', { ...LLM_AGENT, tools: [BALANCE_TOOL], tool_url: receiver.url, webhook_id: webhookId }, who);
      assert.equal(res.status, 202, res.text);
      const c = await waitForCall(v.gw, who.key, res.body.id, ended, 40_000);
      assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
      const result = '{"balance":"500 rupees"}';
      assert.deepEqual(
        c.transcript.map((t: { role: string; text: string }) => [t.role, t.text]),
        [
          ['callee', 'what is my balance'],
          ['agent', 'One moment please.'],
          ['tool', 'get_balance: ok'],
          ['agent', `The tool said: ${result}`],
        ],
      );
      const { tool } = c.transcript[2];
      assert.deepEqual(
        [tool.id, tool.type, tool.name, tool.arguments, tool.status, tool.status_code, tool.result],
        ['call_fake_1', 'function', 'get_balance', { query: 'what is my balance' }, 'ok', 200, result],
      );
      assert.ok(c.transcript[1].latency_ms > 0, 'the holding line answers the callee: its latency is the turn’s');
      // The request, as the integrator received it: signed with the webhook's secret, its event and fields.
      const [sent] = toolRequests(receiver, c.id);
      assert.ok(sent, 'the integrator was asked');
      assert.ok(verify(secret, sent.raw, sent.headers['x-service-signature']));
      assert.deepEqual(
        [sent.json.event, sent.json.type, sent.json.name, sent.json.tool_call_id, sent.json.arguments],
        ['call.tool', 'function', 'get_balance', 'call_fake_1', { query: 'what is my balance' }],
      );
      assert.match(String(sent.json.id), /^evt_/);
      // The LLM was offered the tool, then given its answer as OpenAI's `tool` message after its own call.
      const [first, second] = v.llm.calls('/v1/chat/completions').slice(chats) as { body: any }[];
      assert.deepEqual(
        first!.body.tools.map((t: any) => t.function.name),
        ['get_balance'],
      );
      assert.equal(first!.body.stream, true);
      const tail = second!.body.messages.slice(-2);
      assert.deepEqual(tail[0].tool_calls, [
        { id: 'call_fake_1', type: 'function', function: { name: 'get_balance', arguments: '{"query":"what is my balance"}' } },
      ]);
      assert.deepEqual([tail[1].role, tail[1].tool_call_id, tail[1].content], ['tool', 'call_fake_1', result]);
      // The outcome, the call.action event and call.ended with the transcript and outcome.
      assert.deepEqual(
        c.outcome.actions.map((a: any) => [a.action, a.status, a.entities]),
        [['get_balance', 'ok', { query: 'what is my balance' }]],
      );
      await waitFor('call.ended delivered', () => events(receiver, c.id, 'call.ended').length === 1);
      const [action] = events(receiver, c.id, 'call.action');
      assert.deepEqual([action?.json.action, action?.json.status, action?.json.entities], ['get_balance', 'ok', { query: 'what is my balance' }]);
      const endedEvent = events(receiver, c.id, 'call.ended')[0]!.json as any;
      assert.deepEqual(endedEvent.transcript, c.transcript);
      assert.deepEqual(endedEvent.outcome, c.outcome);
      // Money: the call's seconds at its rate, nothing for the request or the LLM's turns.
      assert.equal(before - (await walletMicrocents(v.gw, who.session)), c.billed_seconds * 100_000);
      assert.equal(c.cost_cents, c.billed_seconds / 10);
    } finally {
      await receiver.close();
    }
  });

  it("the pack's CREATE_DISPUTE goes to the integrator with its entities; its answer chooses the response said after the holding line", async () => {
    const receiver = await startReceiver();
    try {
      const { who, webhookId } = await integratorAccount(receiver, (_body, res) => json(res, 200, { dispute_id: 'D-1001' }));
      v.stt.say('ATM did not give money but my account got debited', 'haan');
      const res = await v.dial('+919800000031', { tool_url: receiver.url, webhook_id: webhookId, metadata: { customer: 'c-7' } }, who);
      assert.equal(res.status, 202, res.text);
      const c = await waitForCall(v.gw, who.key, res.body.id, ended, 60_000);
      assert.deepEqual(
        c.transcript.map((t: any) => [t.role, t.response_id ?? t.text]),
        [
          ['agent', 'GEN.GREETING'],
          ['callee', 'ATM did not give money but my account got debited'],
          ['agent', 'BANKING.DISPUTE.ASK_RAISE'],
          ['callee', 'haan'],
          ['agent', PACK_HOLD],
          ['tool', 'CREATE_DISPUTE: ok'],
          ['agent', 'BANKING.DISPUTE.CREATED'],
        ],
      );
      const [sent] = toolRequests(receiver, c.id);
      assert.deepEqual(
        [sent?.json.type, sent?.json.name, sent?.json.intent, sent?.json.metadata],
        ['action', 'CREATE_DISPUTE', 'BANKING.ATM.CASH_NOT_DISPENSED', { customer: 'c-7' }],
      );
      assert.equal(c.transcript[5].tool.result, '{"dispute_id":"D-1001"}');
      assert.deepEqual(
        c.outcome.actions.map((a: any) => [a.action, a.intent, a.status]),
        [['CREATE_DISPUTE', 'BANKING.ATM.CASH_NOT_DISPENSED', 'ok']],
      );
      await waitFor('call.action delivered', () => events(receiver, c.id, 'call.action').length === 1);
    } finally {
      await receiver.close();
    }
  });

  it('a request the integrator refuses (a forged signature) or does not answer in time is said politely, and the call goes on', async () => {
    const receiver = await startReceiver();
    try {
      const { who, webhookId, secret } = await integratorAccount(receiver, (_body, res) => json(res, 200, {}));
      // The integrator checks another secret: every request of the call fails its check (a forged one would too).
      const expected = 'whsec_not-the-calls';
      integrator(
        receiver,
        () => expected,
        (_body, res) => json(res, 200, {}),
      );
      v.stt.say('ATM did not give money but my account got debited', 'haan');
      const refused = await v.dial('+919800000031', { tool_url: receiver.url, webhook_id: webhookId }, who);
      const r = await waitForCall(v.gw, who.key, refused.body.id, ended, 60_000);
      assert.deepEqual([r.status, r.end_reason], ['completed', 'callee_hangup'], JSON.stringify(r));
      assert.deepEqual(
        r.transcript.slice(4).map((t: any) => [t.role, t.text]),
        [
          ['agent', PACK_HOLD],
          ['tool', 'CREATE_DISPUTE: refused'],
          ['agent', PACK_FAILED],
        ],
      );
      assert.deepEqual([r.transcript[5].tool.status_code, r.transcript[5].tool.error], [401, 'http_401']);
      assert.equal(r.outcome.actions[0].status, 'refused');
      // The integrator's side: the gateway's request verifies only with the call's webhook secret, never with another.
      const [sent] = toolRequests(receiver, r.id);
      assert.ok(verify(secret, sent!.raw, sent!.headers['x-service-signature']));
      assert.ok(!verify(expected, sent!.raw, sent!.headers['x-service-signature']));

      // An integrator that never answers: the call's timeout (1 s) ends the wait.
      integrator(
        receiver,
        () => secret,
        () => {},
      );
      v.stt.say('ATM did not give money but my account got debited', 'haan');
      const late = await v.dial('+919800000031', { tool_url: receiver.url, webhook_id: webhookId, tool_timeout_ms: 1000 }, who);
      const t = await waitForCall(v.gw, who.key, late.body.id, ended, 60_000);
      assert.deepEqual([t.status, t.end_reason], ['completed', 'callee_hangup'], JSON.stringify(t));
      const entry = t.transcript[5];
      assert.deepEqual([entry.role, entry.tool.status, entry.tool.error], ['tool', 'timeout', 'timeout'], JSON.stringify(t.transcript));
      assert.ok(entry.tool.latency_ms >= 1000 && entry.tool.latency_ms < 2500, `waited ${entry.tool.latency_ms} ms`);
      assert.deepEqual([t.transcript[6].text, t.transcript[6].response_id], [PACK_FAILED, 'GEN.ACTION_FAILED']);
      assert.notEqual(PACK_FAILED, APOLOGY, "the pack's wording, not the gateway's");
      await waitFor('call.action delivered', () => events(receiver, t.id, 'call.action').length === 1);
      assert.equal(events(receiver, t.id, 'call.action')[0]!.json.status, 'timeout');
    } finally {
      await receiver.close();
    }
  });

  it('refuses tools it could not send: no webhook to sign with, no URL, two of one name, tools for a pack, a URL a webhook could not have', async () => {
    const who = await voiceAccount(v.gw, 1000);
    const { id: webhookId } = await hook(who, 'http://127.0.0.1:9/hook');
    const cases: [Record<string, unknown>, string][] = [
      [{ ...LLM_AGENT, tools: [BALANCE_TOOL], tool_url: 'http://127.0.0.1:9/tool' }, 'webhook_id'],
      [{ ...LLM_AGENT, tools: [BALANCE_TOOL], webhook_id: webhookId }, 'tools[0].url'],
      [{ ...LLM_AGENT, tools: [BALANCE_TOOL, BALANCE_TOOL], tool_url: 'http://127.0.0.1:9/tool', webhook_id: webhookId }, 'tools[1].function.name'],
      [{ tools: [BALANCE_TOOL], tool_url: 'http://127.0.0.1:9/tool', webhook_id: webhookId }, 'tools'],
      [{ tool_url: 'ftp://127.0.0.1/tool', webhook_id: webhookId }, 'tool_url'],
      [{ tool_url: 'http://127.0.0.1:9/tool', webhook_id: 999_999 }, 'webhook_id'],
    ];
    for (const [body, param] of cases) {
      const res = await v.dial('+919800000099', body, who);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.deepEqual([res.body.error.code, res.body.error.param], ['invalid_request', param], res.text);
    }
    const wallet = (await call(v.gw.url, 'GET', '/portal/wallet', { token: who.session })).body;
    assert.equal(wallet.held_cents, 0);
  });
});
