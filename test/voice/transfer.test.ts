// Cold transfers (issue 41 §2) against a fake Twilio (test/fakes/twilio.ts) over real loopback
// sockets, and through the simulator carrier: the API's transfer and the demo pack's escalation to a
// person on a call given `transfer_to`. The agent's hand-off line plays whole, then the live call is
// updated with TwiML <Dial> (never hung up by the gateway); the call ends completed / transferred,
// billed to the hand-off, with call.transferred; the transfer callee says what the person did.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call, type TestGateway } from '../helper.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { ended, localSpeech, place, startVoiceGateway, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';
import { putScriptedVoice, ScriptedStt } from './simulated.ts';

const CALLEES = [
  // The callee of an API transfer: answers and stays on the line, silent.
  { to: '+919800000040', answer: 'answer' as const, ring_ms: 100, steps: [] },
  // The person a call is handed to: answers after 300 ms, talks for a second, hangs up.
  { to: '+919800000041', answer: 'answer' as const, ring_ms: 300, steps: [{ silence_ms: 1000 }, { hangup: true as const }] },
  // A callee who asks for a person after the greeting (the scripted stt hears it).
  {
    to: '+919800000042',
    answer: 'answer' as const,
    ring_ms: 100,
    steps: [{ wait_agent: 'done' as const, ms: 300 }, { say: 'I need to talk to a real person' }],
  },
  // A callee who asks for a person while the API's hand-off line plays.
  {
    to: '+919800000044',
    answer: 'answer' as const,
    ring_ms: 100,
    steps: [{ wait_agent: 'speaking' as const, ms: 100 }, { say: 'a person' }, { silence_ms: 3000 }],
  },
  // A person who is busy.
  { to: '+919800000043', answer: 'busy' as const, ring_ms: 100, steps: [] },
  { to: '*', answer: 'answer' as const, ring_ms: 100, steps: [] },
];

const twilioRoute = (baseUrl: string) => ({ provider: 'twilio', base_url: baseUrl, account_sid: 'ACxfer', api_key: 'xfer-auth-token', from: '+14155550100' });

describe('cold transfers', () => {
  let gw: TestGateway;
  let twilio: FakeTwilio;
  let stt: ScriptedStt;
  let acc: VoiceAccount;
  before(async () => {
    // The callees speak with the gateway's own tts-local (rendered while their phone rings).
    const speak = (text: string, voice: string) => localSpeech(gw.url, acc.key, text, voice);
    twilio = await FakeTwilio.start({ accountSid: 'ACxfer', authToken: 'xfer-auth-token', callees: CALLEES, speak });
    stt = await ScriptedStt.start();
    gw = await startVoiceGateway(CALLEES);
    await putScriptedVoice(gw.url, stt, 'voice-xfer', [twilioRoute(twilio.url)]);
    await putScriptedVoice(gw.url, stt, 'voice-xfer-sim', [{ provider: 'simulator' }]);
    acc = await voiceAccount(gw);
  });
  after(async () => {
    await gw.destroy();
    await twilio.close();
    await stt.server.close();
  });

  const dial = (to: string, body: Record<string, unknown> = {}) =>
    place(gw, acc.key, { model: 'voice-xfer', to, first_message: { mode: 'wait_for_callee' }, ...body });
  const transfer = (id: string, body: unknown, key = acc.key) => call(gw.url, 'POST', `/v1/voice/calls/${id}/transfer`, { token: key, body });
  const inProgress = (id: string) => waitForCall(gw, acc.key, id, (c) => c.status === 'in_progress' || ended(c));

  it('POST …/transfer on Twilio: the hand-off line plays whole, the live call is updated with <Dial>, the call ends transferred, billed to the hand-off', async () => {
    const res = await dial('+919800000040');
    assert.equal(res.status, 202, res.text);
    const id = res.body.id as string;
    assert.equal((await inProgress(id)).status, 'in_progress');
    await new Promise((r) => setTimeout(r, 1000));
    const asked = await transfer(id, { to: '+919800000041', mode: 'cold' });
    assert.equal(asked.status, 202, asked.text);
    assert.equal(asked.body.status, 'in_progress', 'answered as it stands: the hand-off line plays first');
    const c = await waitForCall(gw, acc.key, id, ended, 20_000);
    assert.deepEqual([c.status, c.end_reason, c.transferred_to], ['completed', 'transferred', '+919800000041'], JSON.stringify(c));
    const line = c.transcript.at(-1);
    assert.deepEqual([line.role, line.response_id, line.interrupted], ['agent', 'GEN.AGENT', false], JSON.stringify(c.transcript));
    assert.equal(line.heard_text, line.text, 'the hand-off line played to its end');
    assert.ok(c.duration_seconds >= line.end - 0.1, 'the call ends after the line, at the hand-off');
    assert.ok(c.billed_seconds >= Math.floor(c.duration_seconds) && c.billed_seconds <= Math.ceil(c.duration_seconds), JSON.stringify(c));
    const sid = twilio.sidOf(id)!;
    const dials = twilio.transfers.filter((t) => t.sid === sid);
    assert.equal(dials.length, 1);
    assert.equal(dials[0]!.twiml, '<Response><Dial callerId="+14155550100"><Number>+919800000041</Number></Dial></Response>');
    const hangups = twilio.requests.filter((r) => r.path.endsWith(`/Calls/${sid}.json`) && r.form.get('Status') !== null);
    assert.equal(hangups.length, 0, 'the gateway never hangs up a transferred call');
    const asksBack = await call(gw.url, 'GET', `/v1/voice/exotel/connect?CallSid=${sid}`);
    assert.equal(asksBack.status, 404, "a Twilio call's hand-off is not kept for Exotel's Connect applet");
    const events = gw.events.filter((e) => e.fields.call_id === id);
    assert.deepEqual(
      events.map((e) => e.event),
      ['call.answered', 'call.transferred', 'call.ended'],
    );
    assert.equal(events[1]!.fields.transferred_to, '+919800000041');
    assert.equal(events[2]!.fields.end_reason, 'transferred');
    assert.equal(events[2]!.fields.transferred_to, '+919800000041');
    // The person answered the bridged call (the transfer callee), after the gateway left it.
    for (let i = 0; i < 50 && dials[0]!.answered === undefined; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(dials[0]!.answered, true);
    const wallet = (await call(gw.url, 'GET', '/portal/wallet', { token: acc.session })).body;
    assert.equal(wallet.held_cents, 0, 'settled once, nothing held');
  });

  it("the demo pack's escalation to a person transfers a call placed with transfer_to (ESCALATE into AGENT_HANDOFF)", async () => {
    stt.say('I need to talk to a real person');
    const res = await place(gw, acc.key, { model: 'voice-xfer', to: '+919800000042', transfer_to: '+919800000041' });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 30_000);
    assert.deepEqual([c.status, c.end_reason, c.transferred_to], ['completed', 'transferred', '+919800000041'], JSON.stringify(c));
    assert.deepEqual(
      c.transcript.map((t: { role: string; response_id?: string; text: string }) => [t.role, t.response_id ?? t.text]),
      [
        ['agent', 'GEN.GREETING'],
        ['callee', 'I need to talk to a real person'],
        ['agent', 'GEN.AGENT'],
      ],
    );
    assert.equal(c.outcome.final_state, 'AGENT_HANDOFF');
    const sid = twilio.sidOf(res.body.id)!;
    assert.equal(twilio.transfers.filter((t) => t.sid === sid).length, 1);
  });

  it('a transfer under way takes no other: a second POST is 409 naming it, and the callee asking for a person meanwhile is not answered', async () => {
    stt.say('I need to talk to a real person');
    const res = await dial('+919800000044', { transfer_to: '+919800000043' });
    const id = res.body.id as string;
    assert.equal((await inProgress(id)).status, 'in_progress');
    assert.equal((await transfer(id, { to: '+919800000041', mode: 'cold' })).status, 202);
    const again = await transfer(id, { to: '+919800000043', mode: 'cold' });
    assert.deepEqual([again.status, again.body.error?.code], [409, 'call_not_active'], again.text);
    assert.match(again.body.error.message, /being transferred already/);
    const c = await waitForCall(gw, acc.key, id, ended, 20_000);
    assert.deepEqual([c.end_reason, c.transferred_to], ['transferred', '+919800000041'], JSON.stringify(c));
    const agent = c.transcript.filter((t: { role: string }) => t.role === 'agent').map((t: { response_id?: string }) => t.response_id);
    assert.deepEqual(agent, ['GEN.AGENT'], 'the hand-off line once; the escalation heard during it says nothing more');
    const sid = twilio.sidOf(id)!;
    assert.deepEqual(
      twilio.transfers.filter((t) => t.sid === sid).map((t) => t.to),
      ['+919800000041'],
    );
  });

  it('refuses a transfer like a call: a number outside the countries, not E.164, another mode, another account, a call not in progress', async () => {
    const bad = await place(gw, acc.key, { model: 'voice-xfer', to: '+919800000040', transfer_to: '+14155550123' });
    assert.deepEqual([bad.status, bad.body.error?.code, bad.body.error?.param], [400, 'destination_not_allowed', 'transfer_to'], bad.text);
    const res = await dial('+919800000040');
    const id = res.body.id as string;
    await inProgress(id);
    for (const [body, code, param] of [
      [{ to: '+14155550123', mode: 'cold' }, 'destination_not_allowed', 'to'],
      [{ to: '98000 00041', mode: 'cold' }, 'invalid_request', 'to'],
    ] as const) {
      const r = await transfer(id, body);
      assert.deepEqual([r.status, r.body.error?.code, r.body.error?.param], [400, code, param], r.text);
    }
    assert.equal((await transfer(id, { to: '+919800000041', mode: 'warm' })).status, 400);
    assert.equal((await transfer(id, { to: '+919800000041' })).status, 400);
    const other = await voiceAccount(gw, 0);
    const theirs = await transfer(id, { to: '+919800000041', mode: 'cold' }, other.key);
    assert.deepEqual([theirs.status, theirs.body.error?.code], [404, 'not_found']);
    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${id}/hangup`, { token: acc.key })).status, 200);
    const over = await transfer(id, { to: '+919800000041', mode: 'cold' });
    assert.deepEqual([over.status, over.body.error?.code], [409, 'call_not_active'], over.text);
    assert.match(over.body.error.message, /completed/);
    const still = await waitForCall(gw, acc.key, id, ended);
    assert.deepEqual([still.end_reason, still.transferred_to], ['api_hangup', null]);
  });

  it('through the simulator carrier: the callee is put through to its transfer callee; a busy person still ends the call transferred', async () => {
    const res = await place(gw, acc.key, { model: 'voice-xfer-sim', to: '+919800000040', first_message: { mode: 'wait_for_callee' } });
    const id = res.body.id as string;
    assert.equal((await inProgress(id)).status, 'in_progress');
    const asked = await transfer(id, { to: '+919800000043', mode: 'cold' });
    assert.equal(asked.status, 202, asked.text);
    const again = await transfer(id, { to: '+919800000043', mode: 'cold' });
    assert.deepEqual([again.status, again.body.error?.code], [409, 'call_not_active'], 'one transfer at a time');
    const c = await waitForCall(gw, acc.key, id, ended, 20_000);
    assert.deepEqual([c.status, c.end_reason, c.transferred_to], ['completed', 'transferred', '+919800000043'], JSON.stringify(c));
    assert.equal(c.transcript.at(-1).response_id, 'GEN.AGENT');
  });
});
