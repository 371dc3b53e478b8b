// Outbound calls end to end through the simulator carrier, over real loopback sockets: the simulated
// callee answers (or not) after its script's delay, opens the media stream to the gateway and speaks
// Twilio's Media Streams protocol; its speech is espeak-ng's (tts-local), heard by the gateway's VAD
// and recognised by a scripted stt upstream (an OpenAI-compatible fake: pocketsphinx on 8 kHz
// μ-law is too unreliable for exact assertions), understood by the demo intent pack, answered with
// pre-rendered tts-local audio. What is asserted is what a client reads back: statuses, end reasons,
// the transcript with what was heard, the outcome, the charge in the wallet, the webhook events.
// What the call API refuses and limits: requests it cannot place, credit, Idempotency-Key, calls at
// once (an operator's limit per account too), webhook_id, and the lists. The intent agent's flows
// are calls.test.ts's, the other agents and the ends calls-agents-and-ends.test.ts's: three files so
// their calls run side by side.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, type TestGateway } from '../helper.ts';
import { waitFor } from '../actors/helpers.ts';
import { startReceiver, verify } from '../webhooks/receiver.ts';
import { ended, place, voiceAccount, waitForCall, walletMicrocents, type VoiceAccount } from './helpers.ts';
import { simulatedVoice, type SimulatedVoice } from './simulated.ts';

describe('voice calls through the simulator: refusals, credit, idempotency, limits, webhook_id, lists', () => {
  const v = simulatedVoice();
  let gw: TestGateway;
  let acc: VoiceAccount;
  before(() => {
    ({ gw, acc } = v);
  });
  const dial = (...args: Parameters<SimulatedVoice['dial']>) => v.dial(...args);

  it('refuses what it cannot place, in the error envelope, holding nothing', async () => {
    const before = await walletMicrocents(gw, acc.session);
    const cases: [Record<string, unknown>, number, string, string | null][] = [
      [{ to: '9876543210' }, 400, 'invalid_request', 'to'],
      [{ to: '+91123' }, 400, 'invalid_request', 'to'],
      [{ to: '+14155550100' }, 400, 'destination_not_allowed', 'to'],
      [{ to: '+919800000099', surprise: 1 }, 400, 'invalid_request', null],
      [{ to: '+919800000099', language: 'ta-IN' }, 400, 'language_not_supported', 'language'],
      [{ to: '+919800000099', voice: 'ta' }, 400, 'voice_not_supported', 'voice'],
      [{ to: '+919800000099', first_message: { response_id: 'NO.SUCH' } }, 400, 'invalid_request', 'first_message.response_id'],
      [{ to: '+919800000099', agent: { type: 'intent', intent_model: 'stt-local' } }, 400, 'invalid_request', 'agent.intent_model'],
      [{ to: '+919800000099', max_duration_seconds: 5 }, 400, 'invalid_request', null],
      [{ to: '+919800000099', model: 'stt-local' }, 404, 'model_not_found', 'model'],
    ];
    for (const [body, status, code, param] of cases) {
      const res = await dial(String(body.to), body);
      assert.equal(res.status, status, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.body.error.code, code, JSON.stringify(body));
      if (param !== null) assert.equal(res.body.error.param, param, JSON.stringify(body));
      assert.match(res.headers.get('x-request-id') ?? '', /.+/);
    }
    assert.equal(await walletMicrocents(gw, acc.session), before);
    // A key without the voice scope; another account's call.
    const keyRes = await call(gw.url, 'POST', '/portal/keys', { token: acc.session, body: { name: 'chat only', scopes: ['chat'] } });
    const denied = await place(gw, keyRes.body.api_key, { model: 'voice-test', to: '+919800000099' });
    assert.deepEqual([denied.status, denied.body.error.code], [403, 'permission_denied']);
    const other = await voiceAccount(gw, 0);
    const mine = await dial('+919800000002');
    for (const [method, path] of [
      ['GET', `/v1/voice/calls/${mine.body.id}`],
      ['POST', `/v1/voice/calls/${mine.body.id}/cancel`],
      ['GET', '/v1/voice/calls/call_000000000000000000000000'],
    ] as const) {
      const res = await call(gw.url, method, path, { token: other.key });
      assert.deepEqual([res.status, res.body.error.code], [404, 'not_found'], path);
    }
    const list = await call(gw.url, 'GET', '/v1/voice/calls', { token: other.key });
    assert.deepEqual(list.body.data, []);
  });

  it('refuses a call the wallet cannot cover for voice.minAffordableSeconds (402), and reserves min(max duration, affordable)', async () => {
    const poor = await voiceAccount(gw, 0); // 0 s; the test gateway's floor is 10 s (a cent)
    const res = await dial('+919800000099', {}, poor);
    assert.deepEqual([res.status, res.body.error.code], [402, 'insufficient_credit']);
    assert.match(res.body.error.message, /at least 10 s of credit \(1 cents at 6 cents a minute\)/);
    const some = await voiceAccount(gw, 9); // 90 s
    const placed = await dial('+919800000099', { max_duration_seconds: 300 }, some);
    assert.equal(placed.status, 202, placed.text);
    const wallet = (await call(gw.url, 'GET', '/portal/wallet', { token: some.session })).body;
    assert.equal(wallet.held_cents, 9, 'the reservation is what the wallet affords, not 300 s');
    await waitForCall(gw, some.key, placed.body.id, (x) => x.status === 'in_progress');
    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${placed.body.id}/hangup`, { token: some.key })).status, 200);
    const c = await waitForCall(gw, some.key, placed.body.id, ended);
    assert.equal((await call(gw.url, 'GET', '/portal/wallet', { token: some.session })).body.held_cents, 0, 'the reservation is settled');
    assert.equal(c.max_duration_seconds, 90);
  });

  it('Idempotency-Key: the same body returns the same call; another body is 409', async () => {
    const headers = { 'idempotency-key': `k-${Date.now()}` };
    const first = await dial('+919800000002', { metadata: { a: '1' } }, acc, headers);
    assert.equal(first.status, 202);
    const again = await dial('+919800000002', { metadata: { a: '1' } }, acc, headers);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.id, first.body.id);
    const other = await dial('+919800000002', { metadata: { a: '2' } }, acc, headers);
    assert.deepEqual([other.status, other.body.error.code], [409, 'idempotency_key_reused']);
    await waitForCall(gw, acc.key, first.body.id, ended);
    // Racing requests with one key place one call.
    const race = { 'idempotency-key': `race-${Date.now()}` };
    const answers = await Promise.all([0, 1, 2, 3].map(() => dial('+919800000002', {}, acc, race)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 202], answers.map((a) => a.text).join('\n'));
    assert.equal(new Set(answers.map((a) => a.body.id)).size, 1);
    await waitForCall(gw, acc.key, answers[0]!.body.id, ended);
  });

  it('limits concurrent calls per account: 429 concurrency_limit_exceeded with Retry-After', async () => {
    const who = await voiceAccount(gw, 1000);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await dial('+919800000003', {}, who);
      assert.equal(r.status, 202, r.text);
      ids.push(r.body.id);
    }
    const fourth = await dial('+919800000003', {}, who);
    assert.deepEqual([fourth.status, fourth.body.error.code], [429, 'concurrency_limit_exceeded']);
    assert.match(fourth.headers.get('retry-after') ?? '', /^\d+$/);
    for (const id of ids) await call(gw.url, 'POST', `/v1/voice/calls/${id}/cancel`, { token: who.key });
    for (const id of ids) await waitForCall(gw, who.key, id, ended);
    assert.equal((await dial('+919800000002', {}, who)).status, 202, 'room again once they ended');
  });

  it("an operator sets an account's own limit on calls at once: 1 refuses the second, 2 lets it through", async () => {
    const who = await voiceAccount(gw, 1000);
    const limits = (body: unknown) => call(gw.url, 'PATCH', `/admin/limits/user/${who.id}`, { token: ADMIN_TOKEN, body });
    const set = await limits({ voice_max_concurrent_calls: 1 });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body, { owner_type: 'user', owner_id: who.id, voice_max_concurrent_calls: 1, recording_retention_days: null });
    assert.deepEqual((await call(gw.url, 'GET', `/admin/limits/user/${who.id}`, { token: ADMIN_TOKEN })).body.voice_max_concurrent_calls, 1);
    const first = await dial('+919800000003', {}, who);
    assert.equal(first.status, 202, first.text);
    const second = await dial('+919800000003', {}, who);
    assert.deepEqual([second.status, second.body.error.code], [429, 'concurrency_limit_exceeded']);
    assert.match(second.headers.get('retry-after') ?? '', /^\d+$/);
    assert.equal((await limits({ voice_max_concurrent_calls: 2 })).status, 200);
    const again = await dial('+919800000003', {}, who);
    assert.equal(again.status, 202, again.text);
    // Refused: a key, not an operator; a limit of 0, a string, an unknown field.
    assert.equal((await call(gw.url, 'PATCH', `/admin/limits/user/${who.id}`, { token: who.key, body: { voice_max_concurrent_calls: 9 } })).status, 401);
    for (const body of [{ voice_max_concurrent_calls: 0 }, { voice_max_concurrent_calls: '3' }, { rpm: 1 }])
      assert.equal((await limits(body)).status, 400, JSON.stringify(body));
    // A user or organization that is not there: 404 both ways, and nothing stored for it.
    for (const path of ['/admin/limits/user/987654321', '/admin/limits/org/987654321']) {
      const patched = await call(gw.url, 'PATCH', path, { token: ADMIN_TOKEN, body: { voice_max_concurrent_calls: 5 } });
      assert.deepEqual([patched.status, patched.body.error?.code], [404, 'not_found'], patched.text);
      const read = await call(gw.url, 'GET', path, { token: ADMIN_TOKEN });
      assert.deepEqual([read.status, read.body.error?.code], [404, 'not_found'], read.text);
    }
    // null: back to the gateway's default (3 here).
    assert.equal((await limits({ voice_max_concurrent_calls: null })).body.voice_max_concurrent_calls, null);
    for (const id of [first.body.id, again.body.id]) await call(gw.url, 'POST', `/v1/voice/calls/${id}/cancel`, { token: who.key });
    for (const id of [first.body.id, again.body.id]) await waitForCall(gw, who.key, id, ended);
  });

  it("webhook_id: the call's events go to that endpoint only, subscribed or not; another account's or an unknown id is 400", async () => {
    const receiver = await startReceiver();
    const other = await startReceiver();
    try {
      const who = await voiceAccount(gw, 1000);
      const hook = async (url: string, events: string[]) => {
        const res = await call(gw.url, 'POST', '/portal/webhooks', { token: who.session, body: { url, events } });
        assert.equal(res.status, 201, res.text);
        return res.body as { id: number; secret: string };
      };
      const named = await hook(receiver.url, ['topup']); // not subscribed to call events
      await hook(other.url, ['call.answered', 'call.ended']); // subscribed, not named
      const res = await dial('+919800000012', { webhook_id: named.id }, who);
      assert.equal(res.status, 202, res.text);
      const c = await waitForCall(gw, who.key, res.body.id, ended, 40_000);
      await waitFor('both call events delivered', () => receiver.received.filter((r) => r.json.call_id === c.id).length >= 2);
      const got = receiver.received.filter((r) => r.json.call_id === c.id);
      assert.deepEqual(
        got.map((r) => r.json.event),
        ['call.answered', 'call.ended'],
      );
      assert.ok(got.every((r) => verify(named.secret, r.raw, r.headers['x-service-signature'])));
      assert.deepEqual([got[1]!.json.end_reason, got[1]!.json.billed_seconds], [c.end_reason, c.billed_seconds]);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(other.received.filter((r) => r.json.call_id === c.id).length, 0, 'the endpoint not named hears nothing of this call');

      const stranger = await voiceAccount(gw, 1000);
      for (const id of [named.id, 999_999]) {
        const refused = await dial('+919800000012', { webhook_id: id }, stranger);
        assert.deepEqual([refused.status, refused.body.error.code, refused.body.error.param], [400, 'invalid_request', 'webhook_id'], refused.text);
      }
      const text = await dial('+919800000012', { webhook_id: String(named.id) }, who);
      assert.deepEqual([text.status, text.body.error.param], [400, 'webhook_id'], 'an id is the number the portal shows');
    } finally {
      await receiver.close();
      await other.close();
    }
  });

  it('lists calls newest first with a cursor, by status and updated_after', async () => {
    const who = await voiceAccount(gw, 1000);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await dial('+919800000002', {}, who)).body.id);
    for (const id of ids) await waitForCall(gw, who.key, id, ended);
    const page1 = await call(gw.url, 'GET', '/v1/voice/calls?limit=2', { token: who.key });
    assert.equal(page1.status, 200, page1.text);
    assert.deepEqual(
      page1.body.data.map((c: { id: string }) => c.id),
      [ids[2], ids[1]],
    );
    assert.equal(page1.body.has_more, true);
    const page2 = await call(gw.url, 'GET', `/v1/voice/calls?limit=2&after=${page1.body.last_id}`, { token: who.key });
    assert.deepEqual(
      page2.body.data.map((c: { id: string }) => c.id),
      [ids[0]],
    );
    const busy = await call(gw.url, 'GET', '/v1/voice/calls?status=busy', { token: who.key });
    assert.equal(busy.body.data.length, 3);
    const none = await call(gw.url, 'GET', '/v1/voice/calls?status=completed', { token: who.key });
    assert.equal(none.body.data.length, 0);
    const later = await call(gw.url, 'GET', `/v1/voice/calls?updated_after=${Math.ceil(Date.now() / 1000) + 60}`, { token: who.key });
    assert.equal(later.body.data.length, 0);
    const since = await call(gw.url, 'GET', `/v1/voice/calls?updated_after=${Math.floor(Date.now() / 1000) - 600}`, { token: who.key });
    assert.equal(since.body.data.length, 3);
  });
});
