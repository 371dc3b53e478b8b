// The pieces of the agent's requests that need no call (src/voice/tools.ts): an LLM's streamed tool
// calls gathered from OpenAI's deltas (several at once, their arguments in pieces) and sent when its
// stream ends, none when a barge-in cut it; what the LLM is told of each answer; the pack response
// an action's answer chooses.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { CallTools, responseFor, toolResult, ToolRound, type ToolAsk } from '../../src/voice/tools.ts';
import type { ToolAnswer, ToolPlan } from '../../src/voice/tool-requests.ts';

const PLAN: ToolPlan = {
  definitions: [
    { type: 'function', function: { name: 'get_balance' } },
    { type: 'function', function: { name: 'block_card' } },
  ],
  targets: { get_balance: { url: 'http://127.0.0.1:1/balance', secret: 'whsec_test' }, block_card: { url: 'http://127.0.0.1:1/card', secret: 'whsec_test' } },
  actions: { url: 'http://127.0.0.1:1/actions', secret: 'whsec_test' },
  timeoutMs: 1000,
  holdText: null,
};

/** CallTools whose requests are answered by `answer` (recorded), not sent. */
function tools(answer: (url: string, fields: Record<string, unknown>) => ToolAnswer) {
  const sent: { url: string; fields: Record<string, unknown> }[] = [];
  const t = new CallTools(PLAN, {
    requests: {
      post: async (url, _secret, fields) => {
        sent.push({ url, fields });
        return answer(url, fields);
      },
    },
    callId: 'call_0123456789abcdef01234567',
    model: 'voice-test',
    metadata: {},
    now: () => 1_000,
    log: pino({ level: 'silent' }),
  });
  return { t, sent };
}
const ok = (body: string): ToolAnswer => ({ status: 'ok', status_code: 200, error: null, body, latency_ms: 5 });

describe("the agent's requests, without a call", () => {
  it("gathers two streamed tool calls from OpenAI's deltas and sends both when the stream ends, in order", async () => {
    const { t, sent } = tools((url) => ok(url.endsWith('/balance') ? '{"balance":500}' : '{"blocked":true}'));
    const round = new ToolRound(t);
    round.collect([{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_balance', arguments: '' } }]);
    round.collect([{ index: 1, id: 'call_b', type: 'function', function: { name: 'block_card', arguments: '{"la' } }]);
    round.collect([{ index: 0, function: { arguments: '{"account":' } }]);
    round.collect([{ index: 1, function: { arguments: 'st4":"1234"}' } }]);
    round.collect([{ index: 0, function: { arguments: '"savings"}' } }]);
    assert.equal(sent.length, 0, 'nothing is sent while the stream runs');
    const calls = round.finish(false);
    assert.deepEqual(calls, [
      { id: 'call_a', type: 'function', function: { name: 'get_balance', arguments: '{"account":"savings"}' } },
      { id: 'call_b', type: 'function', function: { name: 'block_card', arguments: '{"last4":"1234"}' } },
    ]);
    const entries = await round.answers();
    assert.deepEqual(
      sent.map((s) => [s.url, s.fields.name, s.fields.tool_call_id, s.fields.arguments]),
      [
        ['http://127.0.0.1:1/balance', 'get_balance', 'call_a', { account: 'savings' }],
        ['http://127.0.0.1:1/card', 'block_card', 'call_b', { last4: '1234' }],
      ],
    );
    assert.deepEqual(
      entries.map((e) => [e.exchange.id, e.exchange.status, toolResult(e), e.entities]),
      [
        ['call_a', 'ok', '{"balance":500}', { account: 'savings' }],
        ['call_b', 'ok', '{"blocked":true}', { last4: '1234' }],
      ],
    );
  });

  it('sends nothing of a stream a barge-in cut; a tool the call does not have is refused without a request', async () => {
    const { t, sent } = tools(() => ok('{}'));
    const cut = new ToolRound(t);
    cut.collect([{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_balance', arguments: '{"acc' } }]);
    assert.deepEqual(cut.finish(true), []);
    assert.equal(cut.asked, false);
    const unknown = await t.send({ id: 'call_x', type: 'function', name: 'transfer_money', arguments: '{}' } satisfies ToolAsk);
    assert.deepEqual([unknown.exchange.status, unknown.exchange.error], ['refused', 'unknown_tool']);
    assert.equal(sent.length, 0);
    assert.deepEqual(JSON.parse(toolResult(unknown)), { error: 'the request was refused: unknown_tool' });
  });

  it("an action's answer chooses the pack's response: its own on success, the integrator's response_id when the pack has it, the apology otherwise", async () => {
    const answers: ToolAnswer[] = [
      ok('{"dispute_id":"D-1"}'),
      ok('{"response_id":"BANKING.DISPUTE.EXISTS"}'),
      ok('{"response_id":"NOT.IN.PACK"}'),
      { status: 'timeout', status_code: null, error: 'timeout', body: '', latency_ms: 1000 },
      { status: 'failed', status_code: 503, error: 'http_503', body: 'down', latency_ms: 3 },
    ];
    const { t, sent } = tools(() => answers.shift()!);
    const packHas = (id: string) => id === 'BANKING.DISPUTE.EXISTS';
    const chosen: string[] = [];
    for (let i = 0; i < 5; i++) {
      const entry = await t.send({ id: t.actionId(), type: 'action', name: 'CREATE_DISPUTE', arguments: { amount: 500 }, intent: 'BANKING.ATM' });
      chosen.push(responseFor(entry, 'BANKING.DISPUTE.CREATED', packHas));
    }
    assert.deepEqual(chosen, ['BANKING.DISPUTE.CREATED', 'BANKING.DISPUTE.EXISTS', 'BANKING.DISPUTE.CREATED', 'GEN.ACTION_FAILED', 'GEN.ACTION_FAILED']);
    assert.deepEqual(
      sent.map((s) => [s.url, s.fields.type, s.fields.tool_call_id, s.fields.intent]),
      Array.from({ length: 5 }, (_, i) => ['http://127.0.0.1:1/actions', 'action', `act_0123456789abcdef01234567_${i + 1}`, 'BANKING.ATM']),
    );
  });
});
