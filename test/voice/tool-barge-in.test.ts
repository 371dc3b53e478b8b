// A barge-in on the holding line (issue 41 §5): the callee speaks while the agent waits for the
// integrator's answer. Decided: the answer is still recorded and given to the LLM, but its reply is
// not said as if nothing happened; the callee's new turn is answered instead, with the answer in
// the conversation. When that speech is no turn (a backchannel the call ignores), the answer's
// reply is said after all. Through the simulator's real-time frames, against an integrator on
// loopback that takes 1.5 s to answer the first request.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { call } from '../helper.ts';
import { startReceiver, verify, type Receiver } from '../webhooks/receiver.ts';
import { ended, waitForCall } from './helpers.ts';
import { simulatedVoice } from './simulated.ts';
import type { CalleeScript } from '../../src/config.ts';

const LLM_AGENT = { agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Be brief.' }, first_message: { mode: 'wait_for_callee' } };
const TOOL = { type: 'function', function: { name: 'get_balance', parameters: { type: 'object', properties: { query: { type: 'string' } } } } };
const HOLD = 'One moment please.';
const RESULT = '{"balance":"500 rupees"}';
/** Asks, then speaks over the holding line with `over`, listens to what follows, hangs up. */
const overHold = (to: string, over: string): CalleeScript => ({
  to,
  answer: 'answer',
  ring_ms: 100,
  steps: [
    { silence_ms: 300 },
    { say: 'what is my balance' },
    { wait_agent: 'speaking', ms: 300 },
    { say: over },
    { wait_agent: 'done', ms: 1500 },
    { hangup: true },
  ],
});
const BACKCHANNEL = 'okay sure fine thanks';

describe('a barge-in on the holding line: the callee’s new turn is answered with the answer in context, the stale reply dropped', () => {
  const v = simulatedVoice([
    overHold('+919800000050', 'and my card limit too'),
    overHold('+919800000051', BACKCHANNEL),
    // The demo dispute; its "haan" sends CREATE_DISPUTE, and the callee speaks over the holding line.
    {
      to: '+919800000052',
      answer: 'answer',
      ring_ms: 100,
      steps: [
        { wait_agent: 'done', ms: 200 },
        { say: 'the ATM did not give money but my account got debited' },
        { wait_agent: 'done', ms: 200 },
        { say: 'haan' },
        { wait_agent: 'speaking', ms: 400 },
        { say: 'my card is also blocked' },
        { wait_agent: 'done', ms: 1500 },
        { hangup: true },
      ],
    },
  ]);

  /** A webhook whose receiver answers tool requests (the first after 1.5 s) once they verify. */
  async function integrator(r: Receiver): Promise<number> {
    const hook = await call(v.gw.url, 'POST', '/portal/webhooks', { token: v.acc.session, body: { url: r.url, events: ['call.ended'] } });
    assert.equal(hook.status, 201, hook.text);
    let asked = 0;
    r.set((req, res: ServerResponse, n) => {
      if (!verify(hook.body.secret, r.received[n - 1]!.raw, req.headers['x-service-signature'])) return void res.writeHead(401).end();
      if (req.headers['x-service-event'] !== 'call.tool') return void res.writeHead(204).end();
      const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end(RESULT);
      if (++asked === 1) setTimeout(answer, 1500);
      else answer();
    });
    return hook.body.id;
  }

  const turns = (c: any) => c.transcript.map((t: any) => [t.role, t.text, ...(t.role === 'agent' ? [t.interrupted] : [])]);
  /** Both calls begin so: the question, the holding line cut by the callee, the answer that came meanwhile. */
  const CUT_HOLD = [
    ['callee', 'what is my balance'],
    ['agent', HOLD, true],
    ['tool', 'get_balance: ok'],
  ];
  /** The call `to` with `body`, placed and ended. */
  const placed = async (to: string, body: Record<string, unknown>) => {
    const res = await v.dial(to, { ...LLM_AGENT, tools: [TOOL], ...body });
    assert.equal(res.status, 202, res.text);
    return waitForCall(v.gw, v.acc.key, res.body.id, ended, 40_000);
  };

  it('speech over the holding line is answered with the tool’s result in context; the reply to the result is not said first', async () => {
    const r = await startReceiver();
    try {
      const webhookId = await integrator(r);
      v.stt.say('what is my balance', 'and my card limit too');
      const chats = v.llm.calls('/v1/chat/completions').length;
      const c = await placed('+919800000050', { tool_url: r.url, webhook_id: webhookId });
      assert.deepEqual(
        turns(c),
        [
          ...CUT_HOLD,
          ['callee', 'and my card limit too'],
          // The fake LLM calls its tool again for the new words (its answer comes at once), then speaks.
          ['agent', HOLD, false],
          ['tool', 'get_balance: ok'],
          ['agent', `The tool said: ${RESULT}`, false],
        ],
        JSON.stringify(c.transcript),
      );
      // The LLM was asked about the new turn with the first answer before it: no reply to the answer between.
      const asked = (v.llm.calls('/v1/chat/completions').slice(chats) as { body: any }[]).map((x) => x.body.messages);
      assert.equal(asked.length, 3, 'the first turn, the new turn, the answer to it');
      assert.deepEqual(
        asked[1]!.slice(-3).map((m: any) => [m.role, m.content ?? null]),
        [
          ['assistant', null],
          ['tool', RESULT],
          ['user', 'and my card limit too'],
        ],
      );
      assert.deepEqual(
        c.outcome.actions.map((a: any) => a.status),
        ['ok', 'ok'],
      );
    } finally {
      await r.close();
    }
  });

  it('a backchannel over the holding line is no turn: the reply to the result is said after all', async () => {
    const r = await startReceiver();
    try {
      const webhookId = await integrator(r);
      v.stt.say('what is my balance', BACKCHANNEL);
      const turn = { interruption: { ignore: [BACKCHANNEL] } };
      const c = await placed('+919800000051', { tool_url: r.url, webhook_id: webhookId, turn });
      assert.deepEqual(turns(c), [...CUT_HOLD, ['callee', BACKCHANNEL], ['agent', `The tool said: ${RESULT}`, false]], JSON.stringify(c.transcript));
    } finally {
      await r.close();
    }
  });

  it("a pack's action answered while the callee spoke over its holding line: the pack answers the new turn, not with the action's response", async () => {
    const r = await startReceiver();
    try {
      const webhookId = await integrator(r);
      v.stt.say('ATM did not give money but my account got debited', 'haan', 'my card is also blocked');
      const res = await v.dial('+919800000052', { tool_url: r.url, webhook_id: webhookId });
      assert.equal(res.status, 202, res.text);
      const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 60_000);
      const rows = c.transcript.map((t: any) => [t.role, t.response_id ?? t.text, ...(t.role === 'agent' ? [t.interrupted] : [])]);
      assert.deepEqual(
        rows.slice(3, 7),
        [
          ['callee', 'haan'],
          ['agent', 'One moment please, I am checking that for you.', true],
          ['tool', 'CREATE_DISPUTE: ok'],
          ['callee', 'my card is also blocked'],
        ],
        JSON.stringify(c.transcript),
      );
      assert.equal(rows[7]?.[0], 'agent', 'the new turn is answered');
      assert.ok(!rows.some((x: string[]) => x[1] === 'BANKING.DISPUTE.CREATED'), JSON.stringify(rows));
      assert.deepEqual(
        c.outcome.actions.map((a: any) => [a.action, a.status]),
        [['CREATE_DISPUTE', 'ok']],
      );
    } finally {
      await r.close();
    }
  });
});
