// Inbound calls through the simulator (a caller ringing one of the gateway's numbers: POST
// /admin/voice/simulator/calls) over real loopback sockets: the numbers an operator assigns
// (/admin/voice/numbers), a call taken and answered by the number's agent, billed to the number's
// owner and listed with `direction: "inbound"`; an unknown number, an owner whose wallet cannot cover
// the least a call needs and one at its concurrent calls' limit refused with a spoken line, free.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call } from '../helper.ts';
import { assertDisputeCall, ended, voiceAccount, waitForCall, walletMicrocents } from './helpers.ts';
import { CALLEES, simulatedVoice } from './simulated.ts';
import type { CalleeScript } from '../../src/config.ts';
import { UNAVAILABLE_LINE, UNKNOWN_NUMBER_LINE } from '../../src/voice/inbound.ts';

const NUMBER = '+918047491800';
const CALLERS: CalleeScript[] = [
  // Calls in, reports the ATM, says yes, hangs up after the confirmation (the dispute call's callee).
  { ...CALLEES.find((c) => c.to === '+919800000010')!, to: '+919800000610' } as CalleeScript,
  // Calls in and stays on the line, silent, for 4 s.
  { to: '+919800000611', answer: 'answer', steps: [{ silence_ms: 4000 }, { hangup: true }] },
];

describe('inbound calls through the simulator', () => {
  const v = simulatedVoice(CALLERS);
  const admin = (method: string, path: string, body?: unknown) => call(v.gw.url, method, path, { token: ADMIN_TOKEN, ...(body ? { body } : {}) });
  const ring = (to: string, from: string) => admin('POST', '/admin/voice/simulator/calls', { to, from });

  it('assigns numbers to a voice model and an account (one owner a number), refusing what is not', async () => {
    const owner = { type: 'user', id: v.acc.id };
    assert.equal((await admin('PUT', `/admin/voice/numbers/${NUMBER}`, { model: 'voice-test', owner })).status, 201);
    const again = await admin('PUT', `/admin/voice/numbers/${NUMBER}`, { model: 'voice-test', owner, first_message: { mode: 'agent_first' } });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body.first_message, { mode: 'agent_first' });
    assert.equal((await admin('GET', '/admin/voice/numbers')).body.data.filter((n: { number: string }) => n.number === NUMBER).length, 1);
    const notVoice = await admin('PUT', '/admin/voice/numbers/+918047491801', { model: 'chat-test', owner });
    assert.deepEqual([notVoice.status, notVoice.body.error.param], [400, 'model']);
    const nobody = await admin('PUT', '/admin/voice/numbers/+918047491801', { model: 'voice-test', owner: { type: 'user', id: 999_999 } });
    assert.deepEqual([nobody.status, nobody.body.error.param], [400, 'owner']);
    const bad = await admin('PUT', '/admin/voice/numbers/12345', { model: 'voice-test', owner });
    assert.equal(bad.status, 400);
    const extra = await admin('PUT', `/admin/voice/numbers/${NUMBER}`, { model: 'voice-test', owner, price: 0 });
    assert.equal(extra.status, 400, 'unknown fields are refused');
    const anon = await call(v.gw.url, 'GET', '/admin/voice/numbers', { token: v.acc.key });
    assert.ok([401, 403].includes(anon.status));
  });

  it('a caller rings the number: the call is answered by its agent, billed to its owner, listed as inbound', async () => {
    const before = await walletMicrocents(v.gw, v.acc.session);
    v.stt.say('ATM did not give money but my account got debited', 'haan');
    const res = await ring(NUMBER, '+919800000610');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.taken, true, res.text);
    const id = res.body.call_id;
    const c = await assertDisputeCall(v.gw, v.acc.key, id);
    assert.deepEqual([c.direction, c.to, c.from, c.model], ['inbound', NUMBER, '+919800000610', 'voice-test']);
    assert.ok(c.billed_seconds > 0 && c.cost_cents > 0, JSON.stringify(c));
    assert.equal(c.outcome.actions[0]?.action, 'CREATE_DISPUTE');
    const after = await walletMicrocents(v.gw, v.acc.session);
    assert.equal(before - after, c.billed_seconds * 100_000, "the owner's wallet paid the answered seconds, exactly");
    const listed = (await call(v.gw.url, 'GET', '/v1/voice/calls?limit=100', { token: v.acc.key })).body.data.find((x: { id: string }) => x.id === id);
    assert.equal(listed?.direction, 'inbound');
    const portal = await call(v.gw.url, 'GET', `/portal/voice/calls/${id}`, { token: v.acc.session });
    assert.equal(portal.body.direction, 'inbound', 'the dashboard reads it too');
    const events = v.gw.events.filter((e) => e.fields.call_id === id).map((e) => e.event);
    assert.deepEqual(events, ['call.answered', 'call.action', 'call.ended']);
    // An outbound call says so.
    const out = await v.dial('+919800000012');
    assert.equal(out.body.direction, 'outbound');
  });

  it('an unknown number is refused with a spoken line, and nothing is placed', async () => {
    const count = (await call(v.gw.url, 'GET', '/v1/voice/calls?limit=100', { token: v.acc.key })).body.data.length;
    const res = await ring('+918047491899', '+919800000611');
    assert.deepEqual([res.status, res.body.taken, res.body.reason, res.body.line], [200, false, 'unknown_number', UNKNOWN_NUMBER_LINE]);
    assert.equal((await call(v.gw.url, 'GET', '/v1/voice/calls?limit=100', { token: v.acc.key })).body.data.length, count);
  });

  it("refuses politely and for free when the owner's wallet cannot cover the least a call needs", async () => {
    const empty = await voiceAccount(v.gw, 0);
    assert.equal((await admin('PUT', '/admin/voice/numbers/+918047491802', { model: 'voice-test', owner: { type: 'user', id: empty.id } })).status, 201);
    const res = await ring('+918047491802', '+919800000611');
    assert.deepEqual([res.body.taken, res.body.reason, res.body.line], [false, 'insufficient_credit', UNAVAILABLE_LINE], res.text);
    assert.equal(await walletMicrocents(v.gw, empty.session), 0);
    assert.equal((await call(v.gw.url, 'GET', '/v1/voice/calls', { token: empty.key })).body.data.length, 0);
  });

  it("refuses politely and for free when the owner is at its concurrent calls' limit", async () => {
    const busy = await voiceAccount(v.gw, 1000);
    assert.equal((await admin('PATCH', `/admin/limits/user/${busy.id}`, { voice_max_concurrent_calls: 1 })).status, 200);
    assert.equal((await admin('PUT', '/admin/voice/numbers/+918047491803', { model: 'voice-test', owner: { type: 'user', id: busy.id } })).status, 201);
    const first = await ring('+918047491803', '+919800000611');
    assert.equal(first.body.taken, true, first.text);
    const second = await ring('+918047491803', '+919800000611');
    assert.deepEqual([second.body.taken, second.body.reason, second.body.line], [false, 'concurrency_limit_exceeded', UNAVAILABLE_LINE], second.text);
    const c = await waitForCall(v.gw, busy.key, first.body.call_id, ended, 20_000);
    assert.deepEqual([c.status, c.end_reason, c.direction], ['completed', 'callee_hangup', 'inbound'], JSON.stringify(c));
    const calls = (await call(v.gw.url, 'GET', '/v1/voice/calls', { token: busy.key })).body.data;
    assert.equal(calls.length, 1, 'the refused call was never placed');
    assert.equal(await walletMicrocents(v.gw, busy.session), 1000 * 1_000_000 - c.billed_seconds * 100_000);
  });
});
