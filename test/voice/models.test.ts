// Voice models: the seeded voice-local (simulator carrier) in /v1/models with its call fields, and
// the catalog's rules for voice models and carrier routes (PUT /admin/models).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { ended, place, voiceAccount, waitForCall } from './helpers.ts';

describe('voice models', () => {
  let gw: TestGateway;
  let key: string;
  before(async () => {
    gw = await startTestGateway();
    const user = await signup(gw.url);
    key = (await createKey(gw.url, user.token)).api_key;
  });
  after(() => gw.destroy());

  it('/v1/models shows voice-local with its languages, voices, countries, price, longest call and features', async () => {
    const res = await call(gw.url, 'GET', '/v1/models/voice-local', { token: key });
    assert.equal(res.status, 200, res.text);
    const { created, ...rest } = res.body;
    assert.equal(typeof created, 'number');
    assert.deepEqual(rest, {
      id: 'voice-local',
      object: 'model',
      owned_by: 'gateway',
      type: 'voice',
      languages: ['en-IN', 'hi-IN'],
      voices: ['en-us', 'hi'],
      countries: ['IN', 'US', 'GB'],
      price_per_minute_cents: 1,
      max_duration_seconds: 3600,
      features: ['intent_agent', 'barge_in', 'dtmf', 'transcript'],
    });
  });

  const put = (id: string, body: unknown) => call(gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body });
  const voice = (over: Record<string, unknown> = {}) => ({
    type: 'voice',
    owned_by: 'me',
    stt_model: 'stt-local',
    tts_model: 'tts-local',
    price_per_minute_cents: 2,
    countries: ['IN'],
    pricing: {},
    routes: [{ provider: 'simulator' }],
    ...over,
  });

  it('takes carrier routes on voice models: simulator bare, twilio and exotel with their credentials', async () => {
    assert.equal((await put('v-sim', voice())).status, 201);
    const twilio = { provider: 'twilio', account_sid: 'AC123', api_key_env: 'TWILIO_AUTH_TOKEN', from: '+14155550100' };
    const exotel = { provider: 'exotel', base_url: 'https://api.in.exotel.com', account_sid: 'acme', api_key: 'k', api_token: 't', from: '+918044556677' };
    const res = await put('v-carriers', voice({ routes: [twilio, exotel] }));
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(
      res.body.routes.map((r: { provider: string; api_key_set: boolean }) => [r.provider, r.api_key_set]),
      [
        ['twilio', false],
        ['exotel', true],
      ],
    );
  });

  it('refuses what does not fit, naming the field', async () => {
    const cases: [string, unknown, string][] = [
      ['a voice model routed to an llm provider', voice({ routes: [{ provider: 'openai', base_url: 'https://x', upstream_model: 'm' }] }), 'routes.0.provider'],
      ['a carrier on a non-voice model', { type: 'stt', owned_by: 'me', pricing: {}, routes: [{ provider: 'simulator' }] }, 'routes.0.provider'],
      ['a route without upstream_model', { type: 'stt', owned_by: 'me', pricing: {}, routes: [{ provider: 'local' }] }, 'routes.0.upstream_model'],
      ['a carrier route with upstream_model', voice({ routes: [{ provider: 'simulator', upstream_model: 'x' }] }), 'routes.0.upstream_model'],
      ['twilio without from', voice({ routes: [{ provider: 'twilio', account_sid: 'AC1', api_key: 'k' }] }), 'routes.0.from'],
      ['exotel without api_token', voice({ routes: [{ provider: 'exotel', account_sid: 'a', api_key: 'k', from: '+918044556677' }] }), 'routes.0.api_token'],
      ['a voice model without stt_model', voice({ stt_model: undefined }), 'stt_model'],
      ['a voice model priced per minute of pricing', voice({ pricing: { cents_per_minute: 1 } }), 'pricing.cents_per_minute'],
      [
        'an llm model without pricing',
        { type: 'llm', owned_by: 'me', routes: [{ provider: 'openai', base_url: 'https://x', upstream_model: 'm' }] },
        'pricing',
      ],
      ['a voice model without voices whose tts_model does not exist', voice({ tts_model: 'no-such-tts' }), 'voices'],
      ['a voice model without voices whose tts_model is not a tts model', voice({ tts_model: 'stt-local' }), 'voices'],
      [
        'countries on an stt model',
        { type: 'stt', owned_by: 'me', countries: ['IN'], pricing: {}, routes: [{ provider: 'local', upstream_model: 'x' }] },
        'countries',
      ],
    ];
    for (const [what, body, param] of cases) {
      const res = await put('v-bad', body);
      assert.equal(res.status, 400, `${what}: ${res.text}`);
      assert.equal(res.body.error.param, param, what);
    }
    const schema = await put('v-bad', voice({ max_duration_seconds: 10 }));
    assert.equal(schema.status, 400);
    assert.equal(schema.body.error.code, 'invalid_request');
  });

  it("names the field a voice model's price goes in when it is given as pricing.cents_per_minute", async () => {
    const res = await put('v-bad', voice({ pricing: { cents_per_minute: 1 } }));
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.message, "pricing.cents_per_minute does not apply to voice models; use 'price_per_minute_cents' (beside pricing, not in it).");
    const stt = await put('v-bad', { type: 'stt', owned_by: 'me', pricing: { cents_per_call: 1 }, routes: [{ provider: 'local', upstream_model: 'x' }] });
    assert.equal(stt.status, 400, stt.text);
    assert.equal(stt.body.error.message, 'pricing.cents_per_call does not apply to stt models; use pricing.cents_per_minute.');
  });

  it('takes a voice model priced by price_per_minute_cents alone, without an empty pricing object', async () => {
    const { pricing: _none, ...body } = voice({ price_per_minute_cents: 3 });
    const res = await put('v-no-pricing', body);
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.pricing, {});
    const listed = await call(gw.url, 'GET', '/v1/models/v-no-pricing', { token: key });
    assert.equal(listed.body.price_per_minute_cents, 3, listed.text);
  });

  it("gives a voice model without voices its tts_model's, so its calls are placed", async () => {
    const tts = await call(gw.url, 'GET', '/admin/models/tts-local', { token: ADMIN_TOKEN });
    const res = await put('v-no-voices', voice({ languages: ['en-IN'], intent_model: 'intent-demo' }));
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.voices, tts.body.voices);
    const listed = await call(gw.url, 'GET', '/v1/models/v-no-voices', { token: key });
    assert.deepEqual(listed.body.voices, tts.body.voices);
    // A call on it (to the simulator's busy line) is placed, not refused as offering no voices.
    const account = await voiceAccount(gw);
    const placed = await place(gw, account.key, { model: 'v-no-voices', to: '+919800000002' });
    assert.equal(placed.status, 202, placed.text);
    const done = await waitForCall(gw, account.key, placed.body.id, ended);
    assert.equal(done.status, 'busy', JSON.stringify(done));
  });
});
