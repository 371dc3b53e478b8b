// Voice call tests: a gateway whose simulator callees the test scripts, an account with a funded
// wallet and a key, and polling a call until it reaches a status.
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { SpeechClip } from '../../src/speech/clip.ts';
import type { StartOptions } from '../../src/server.ts';

export interface VoiceAccount {
  id: number;
  session: string;
  key: string;
}

export async function startVoiceGateway(
  callees: unknown[],
  overrides: Record<string, unknown> = {},
  dir?: string,
  opts: StartOptions = {},
): Promise<TestGateway> {
  return startTestGateway({ voice: { simulator: { callees } }, ...overrides }, { ...opts, ...(dir ? { dir } : {}) });
}

export async function voiceAccount(gw: TestGateway, cents = 1000): Promise<VoiceAccount> {
  const user = await signup(gw.url);
  const key = (await createKey(gw.url, user.token)).api_key;
  if (cents > 0) {
    const res = await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: user.id, amount_cents: cents } });
    if (res.status !== 201 && res.status !== 200) throw new Error(`topup failed: ${res.status} ${res.text}`);
  }
  return { id: user.id, session: user.token, key };
}

/** A voice model (stt-local, tts-local, the demo intent pack; 6 cents a minute) whose one route is `route`. */
export const carrierModel = (route: Record<string, unknown>) => ({
  type: 'voice',
  owned_by: 'test',
  stt_model: 'stt-local',
  tts_model: 'tts-local',
  intent_model: 'intent-demo',
  price_per_minute_cents: 6,
  countries: ['IN'],
  languages: ['en-IN'],
  voices: ['en-us'],
  pricing: {},
  routes: [route],
});

export const place = (gw: TestGateway, key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  call(gw.url, 'POST', '/v1/voice/call', { token: key, body: { model: 'voice-local', ...body }, headers });

/** Polls the call until `done` says so (or the time is up: the last state is returned for the assertion to show). */
export async function waitForCall(gw: { url: string }, key: string, id: string, done: (c: any) => boolean, timeoutMs = 20_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < deadline) {
    last = (await call(gw.url, 'GET', `/v1/voice/calls/${id}`, { token: key })).body;
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  return last;
}

export const TERMINAL = ['completed', 'busy', 'no_answer', 'failed', 'canceled'];
export const ended = (c: { status: string; cost_cents: number | null }) => TERMINAL.includes(c.status) && c.cost_cents !== null;

/** The API's cold transfer of the call in progress (once it spoke) to `to`; waits for its end, `transferred` there. */
export async function transferredByApi(gw: { url: string }, key: string, id: string, to: string): Promise<any> {
  await waitForCall(gw, key, id, (c) => c.status === 'in_progress' && (c.transcript ?? []).length > 0);
  const asked = await call(gw.url, 'POST', `/v1/voice/calls/${id}/transfer`, { token: key, body: { to, mode: 'cold' } });
  assert.equal(asked.status, 202, asked.text);
  const c = await waitForCall(gw, key, id, ended);
  assert.deepEqual([c.status, c.end_reason, c.transferred_to], ['completed', 'transferred', to]);
  return c;
}

export async function walletMicrocents(gw: TestGateway, session: string): Promise<number> {
  return (await call(gw.url, 'GET', '/portal/wallet', { token: session })).body.balance_microcents as number;
}

/** A call whose callee barged in on the greeting: the greeting interrupted, its heard_text the start of its text, the callee's turn next. */
export function assertBargedIn(c: any): void {
  const greeting = c.transcript[0];
  assert.equal(greeting.response_id, 'GEN.GREETING');
  assert.equal(greeting.interrupted, true, JSON.stringify(c.transcript));
  assert.ok(greeting.heard_text.length < greeting.text.length && greeting.text.startsWith(greeting.heard_text), JSON.stringify(greeting));
  assert.equal(c.metrics.interruptions, 1);
  assert.equal(c.transcript[1].role, 'callee');
}

/**
 * Places a call to the silent callee from a wallet of 1 cent (10 s at the test models' 6 cents a
 * minute; the test gateways' credit floor is 10 s) and checks what the credit guard did: the pack's
 * low-balance wording played to its end before the limit, the call ended insufficient_credit,
 * billed within the hold and nothing left held. Returns the ended call.
 */
export async function assertCreditGuarded(gw: TestGateway, model: string): Promise<any> {
  const poor = await voiceAccount(gw, 1);
  const res = await place(gw, poor.key, { model, to: '+919800000099' });
  assert.equal(res.status, 202, res.text);
  assert.equal(res.body.max_duration_seconds, 10, 'the wallet set the maximum');
  const c = await waitForCall(gw, poor.key, res.body.id, ended, 30_000);
  assert.deepEqual([c.status, c.end_reason], ['completed', 'insufficient_credit'], JSON.stringify(c));
  const last = c.transcript.at(-1);
  assert.deepEqual([last.role, last.response_id, last.interrupted], ['agent', 'GEN.LOW_BALANCE', false], JSON.stringify(c.transcript));
  assert.equal(last.heard_text, last.text, 'played to its end');
  assert.ok(last.end <= 10, `the wording ended before the limit: ${last.end} s`);
  assert.equal(c.transcript[0].response_id, 'GEN.GREETING');
  assert.ok(c.billed_seconds <= 10 && c.billed_seconds >= 5, `billed ${c.billed_seconds} s`);
  const wallet = (await call(gw.url, 'GET', '/portal/wallet', { token: poor.session })).body;
  assert.equal(wallet.held_cents, 0);
  assert.equal(wallet.balance_microcents, 1_000_000 - c.billed_seconds * 100_000);
  assert.ok(wallet.balance_microcents >= 0);
  return c;
}

/** espeak-ng's speech from the gateway's own tts-local, as 8 kHz PCM16 (what the fake carriers' callees say), paid by `key`. */
export async function localSpeech(gwUrl: string, key: string, input: string, voice: string): Promise<SpeechClip> {
  const res = await fetch(`${gwUrl}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tts-local', input, voice, response_format: 'pcm', sample_rate: 8000 }),
  });
  if (!res.ok) throw new Error(`speech: ${res.status} ${await res.text()}`);
  return new SpeechClip(Buffer.from(await res.arrayBuffer()));
}

/**
 * The demo pack's dispute call (CALLEES' +919800000010, the scripted stt hearing its two lines) ended
 * as it should: hung up by the callee after five turns, billed answer → end to the second. Returns the call.
 */
export async function assertDisputeCall(gw: { url: string }, key: string, id: string): Promise<any> {
  const c = await waitForCall(gw, key, id, ended, 60_000);
  assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
  assert.deepEqual(
    c.transcript.map((t: { role: string; response_id?: string; text: string }) => [t.role, t.response_id ?? t.text]),
    [
      ['agent', 'GEN.GREETING'],
      ['callee', 'ATM did not give money but my account got debited'],
      ['agent', 'BANKING.DISPUTE.ASK_RAISE'],
      ['callee', 'haan'],
      ['agent', 'BANKING.DISPUTE.CREATED'],
    ],
  );
  assert.ok(c.billed_seconds >= Math.floor(c.duration_seconds) && c.billed_seconds <= Math.ceil(c.duration_seconds) + 1, JSON.stringify(c));
  return c;
}

/** `input` spoken by the gateway's tts-local (espeak-ng) as 8 kHz PCM16: what the fake carriers' callees say. */
export async function ttsPcm(gw: { url: string }, key: string, input: string, voice: string): Promise<Buffer> {
  const res = await fetch(`${gw.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tts-local', input, voice, response_format: 'pcm', sample_rate: 8000 }),
  });
  if (!res.ok) throw new Error(`speech: ${res.status} ${await res.text()}`);
  return Buffer.from(await res.arrayBuffer());
}
