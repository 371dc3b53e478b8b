// The agent acts during the call on the carriers' own wire formats (issue 41 §5): the demo pack's
// CREATE_DISPUTE through a fake Exotel (its Voicebot stream's 100 ms PCM16 chunks, the answer's
// callback 4 s late and repeated) and an LLM's tool call through a fake Twilio (Media Streams'
// 20 ms μ-law frames paced in real time, the answer's callback lost), each with an integrator of our
// own on loopback that takes its time to answer. The holding line is played to the carrier in full
// while the request waits (the carrier's marks say it was heard to its end), the answer's reply
// follows it, and the request is on the transcript with its latency.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { call, type TestGateway } from '../helper.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import type { FakeServer } from '../fakes/fake-server.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import { startReceiver, verify, type Receiver } from '../webhooks/receiver.ts';
import { ended, localSpeech, place, startVoiceGateway, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';
import { CALLEES, putChatModel, putScriptedVoice, ScriptedStt } from './simulated.ts';
import type { CalleeScript } from '../../src/config.ts';

const EXOTEL_ROUTE = { provider: 'exotel', account_sid: 'acme1', api_key: 'exo-key', api_token: 'exo-token', from: '+918047491899' };
const TWILIO_ROUTE = { provider: 'twilio', account_sid: 'ACtest', api_key: 'twilio-auth-token', from: '+14155550100' };
const DISPUTE = CALLEES.find((c) => c.to === '+919800000010')!;
/** The demo dispute, then the holding line and the action's reply. */
const DISPUTER = '+919800000071';
/** Asks, listens to the holding line and the answer, hangs up. */
const ASKER = '+919800000072';
const SCRIPTS: CalleeScript[] = [
  { ...DISPUTE, to: DISPUTER, steps: [...DISPUTE.steps.slice(0, -2), { wait_agent: 'done', ms: 1500 }, { hangup: true }] },
  {
    to: ASKER,
    answer: 'answer',
    ring_ms: 100,
    steps: [{ silence_ms: 300 }, { say: 'what is my balance' }, { wait_agent: 'done', ms: 1500 }, { hangup: true }],
  },
];
/** How long the integrator takes to answer: the holding line (about 1 s) plays meanwhile. */
const ANSWER_AFTER_MS = 1500;

describe('the agent acts during calls on fake Exotel and Twilio lines, their callbacks having a bad day', () => {
  let gw: TestGateway;
  let exotel: FakeExotel;
  let twilio: FakeTwilio;
  let stt: ScriptedStt;
  let llm: FakeServer;
  let receiver: Receiver;
  let acc: VoiceAccount;
  let speaker: VoiceAccount;
  let webhookId: number;
  let secret: string;
  before(async () => {
    stt = await ScriptedStt.start();
    const speak = (input: string, voice: string) => localSpeech(gw.url, speaker.key, input, voice);
    exotel = await FakeExotel.start({
      accountSid: EXOTEL_ROUTE.account_sid,
      apiKey: EXOTEL_ROUTE.api_key,
      apiToken: EXOTEL_ROUTE.api_token,
      callees: SCRIPTS,
      speak,
    });
    exotel.badDays.set(DISPUTER, { answeredDelayMs: 4000, repeat: 3 });
    twilio = await FakeTwilio.start({ accountSid: TWILIO_ROUTE.account_sid, authToken: TWILIO_ROUTE.api_key, callees: SCRIPTS, speak });
    twilio.badDays.set(ASKER, { dropAnswered: true });
    gw = await startVoiceGateway([], { webhooks: { allowPrivateNetworks: true, allowHttp: true, sweepIntervalMs: 200 } });
    await putScriptedVoice(gw.url, stt, 'voice-exotel', [{ ...EXOTEL_ROUTE, base_url: exotel.url }]);
    await putScriptedVoice(gw.url, stt, 'voice-twilio', [{ ...TWILIO_ROUTE, base_url: twilio.url }]);
    llm = await startOpenAIUpstream();
    await putChatModel(gw.url, llm);
    acc = await voiceAccount(gw, 1000);
    speaker = await voiceAccount(gw, 100);
    receiver = await startReceiver();
    const hook = await call(gw.url, 'POST', '/portal/webhooks', { token: acc.session, body: { url: receiver.url, events: ['call.action'] } });
    assert.equal(hook.status, 201, hook.text);
    ({ id: webhookId, secret } = hook.body);
    // The integrator: a request that verifies is answered after ANSWER_AFTER_MS; anything else is 401.
    receiver.set((req, res: ServerResponse, n) => {
      const got = receiver.received[n - 1]!;
      if (!verify(secret, got.raw, req.headers['x-service-signature'])) return void res.writeHead(401).end();
      if (req.headers['x-service-event'] !== 'call.tool') return void res.writeHead(204).end();
      const body = got.json.type === 'action' ? { dispute_id: 'D-7' } : { balance: '500 rupees' };
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)), ANSWER_AFTER_MS);
    });
  });
  after(async () => {
    await gw?.destroy();
    await exotel?.close();
    await twilio?.close();
    await stt?.server.close();
    await llm?.close();
    await receiver?.close();
  });

  /** The holding line (`line`) played to its end while the request waited; the request's turn, answered after ANSWER_AFTER_MS; the reply after it. */
  function assertHeldThenAnswered(c: any, hold: number, line: string): void {
    assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
    const [held, tool, reply] = c.transcript.slice(hold);
    assert.deepEqual([held.role, held.text, held.heard_text, held.interrupted], ['agent', line, line, false], JSON.stringify(c.transcript));
    assert.deepEqual([tool.role, tool.tool.status], ['tool', 'ok']);
    assert.ok(tool.tool.latency_ms >= ANSWER_AFTER_MS && tool.tool.latency_ms < ANSWER_AFTER_MS + 1000, `answered in ${tool.tool.latency_ms} ms`);
    assert.ok(tool.start <= held.end && held.start <= tool.start + 0.5, `the holding line played while the request waited: ${JSON.stringify([held, tool])}`);
    assert.ok(reply.role === 'agent' && reply.start >= tool.end - 0.05, JSON.stringify(reply));
  }

  it("Exotel: the pack's CREATE_DISPUTE waits for a slow integrator behind the holding line, then its confirmation plays", async () => {
    stt.say('ATM did not give money but my account got debited', 'haan');
    const res = await place(gw, acc.key, { model: 'voice-exotel', to: DISPUTER, tool_url: receiver.url, webhook_id: webhookId });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 60_000);
    assertHeldThenAnswered(c, 4, 'One moment please, I am checking that for you.'); // the pack's GEN.HOLD
    assert.equal(c.transcript[6].response_id, 'BANKING.DISPUTE.CREATED');
    assert.deepEqual(
      gw.events.filter((e) => e.fields.call_id === c.id).map((e) => e.event),
      ['call.answered', 'call.action', 'call.ended'],
      'once each, whatever the callbacks repeated',
    );
  });

  it("Twilio: an LLM's streamed tool call waits behind the holding line in 20 ms frames; its answer is the LLM's next reply", async () => {
    stt.say('what is my balance');
    const body = {
      model: 'voice-twilio',
      to: ASKER,
      agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Be brief.' },
      first_message: { mode: 'wait_for_callee' },
      tools: [{ type: 'function', function: { name: 'get_balance', parameters: { type: 'object' } } }],
      tool_url: receiver.url,
      webhook_id: webhookId,
    };
    const res = await place(gw, acc.key, body);
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 60_000);
    assertHeldThenAnswered(c, 1, 'One moment please.'); // no pack: the gateway's
    assert.equal(c.transcript[3].text, 'The tool said: {"balance":"500 rupees"}');
  });
});
