// The realtime socket's edge and limits: refusals before the upgrade (the HTTP envelope with its
// status and x-request-id), after it (an error frame, then a close), the per-key cap, oversized and
// malformed frames, a client that vanishes (billed once), a wallet that runs dry mid-session, a key's
// spend cap reached mid-session, and utterance mode on a sync-only route (failover between
// utterances, an upstream failure reported in bounded time).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { ADMIN_TOKEN, call, createKey } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { closedSession, connect, encode, fundedGateway, localPrice, refusal, skipSpeech, speech16k, type Funded } from './helpers.ts';

const model = (routes: object[], centsPerMinute = 0.6) => ({
  type: 'stt',
  owned_by: 'acme',
  languages: ['en-US'],
  streaming: true,
  pricing: { cents_per_minute: centsPerMinute },
  routes,
});

describe('realtime socket: edge and limits', { skip: skipSpeech }, () => {
  let f: Funded;
  let upstream: FakeServer;
  const put = async (id: string, body: object) => {
    const res = await call(f.gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body });
    assert.ok(res.status < 300, res.text);
  };

  before(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'up-key' });
    f = await fundedGateway({ realtime: { maxSocketsPerKey: 2, maxPayloadBytes: 65536, utteranceTimeoutMs: 2000, reauthIntervalMs: 1000 } });
    const route = { provider: 'openai', base_url: `${upstream.url}/v1`, api_key: 'up-key', upstream_model: 'whisper-1' };
    await put('stt-cloud', model([route]));
    await put('stt-failover', model([{ ...route, base_url: 'http://127.0.0.1:9/v1' }, route]));
    await put('stt-batch', { ...model([route]), streaming: false });
  });
  after(async () => {
    await f?.gw.destroy();
    await upstream?.close();
  });

  it('refuses before the upgrade in the HTTP envelope, with the status and x-request-id', async () => {
    const noKey = await refusal(connect(f.gw.url, { model: 'stt-local' }));
    assert.equal(noKey.status, 401);
    assert.equal(noKey.body.error.code, 'invalid_api_key');
    assert.equal(noKey.body.error.request_id, noKey.headers['x-request-id']);
    const wrong = await refusal(connect(f.gw.url, { model: 'stt-local', api_key: 'sk-live-nope' }));
    assert.equal(wrong.status, 401);
    const chatOnly = (await createKey(f.gw.url, f.session, { name: 'chat', scopes: ['chat'] })).api_key;
    const scope = await refusal(connect(f.gw.url, { model: 'stt-local' }, { authorization: `Bearer ${chatOnly}` }));
    assert.equal(scope.status, 403);
    assert.equal(scope.body.error.code, 'permission_denied');
    const rate = await refusal(connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey, sample_rate: '44100' }));
    assert.equal(rate.status, 400);
    assert.equal(rate.body.error.param, 'sample_rate');
    const mulaw24k = await refusal(connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey, sample_rate: '24000', encoding: 'mulaw' }));
    assert.equal(mulaw24k.status, 400);
    assert.equal(mulaw24k.body.error.param, 'sample_rate');
    const batch = await refusal(connect(f.gw.url, { model: 'stt-batch', api_key: f.apiKey }));
    assert.equal(batch.status, 400);
    assert.equal(batch.body.error.param, 'model');
    const unknown = await refusal(connect(f.gw.url, { model: 'nope', api_key: f.apiKey }));
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'model_not_found');
    const hindi = await refusal(connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey, language: 'hi' }));
    assert.equal(hindi.body.error.code, 'language_not_supported');
    // Any other path on the server: 404 in the envelope, not a hang.
    const other = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${f.gw.url.replace(/^http/, 'ws')}/v1/other?api_key=${f.apiKey}`);
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('upgrade', () => resolve(101));
      ws.once('error', () => resolve(0));
    });
    assert.equal(other, 404);
    const poor = await fundedGateway({}, 0);
    try {
      const broke = await refusal(connect(poor.gw.url, { model: 'stt-local', api_key: poor.apiKey }));
      assert.equal(broke.status, 402);
      assert.equal(broke.body.error.code, 'insufficient_credit');
    } finally {
      await poor.gw.destroy();
    }
  });

  it('refuses a model holding a control character before the upgrade, on both URLs, as the HTTP routes do: 400 naming model', async () => {
    const http = await call(f.gw.url, 'POST', '/v1/audio/speech', { token: f.apiKey, body: { model: 'a\u0001', input: 'hi', voice: 'alloy' } });
    assert.equal(http.status, 400, http.text);
    const upgrade = (path: string, model: string) =>
      new Promise<{ status: number; body: any }>((resolve, reject) => {
        const ws = new WebSocket(`${f.gw.url.replace(/^http/, 'ws')}${path}?${new URLSearchParams({ model, api_key: f.apiKey })}`);
        ws.once('upgrade', () => reject(new Error(`${path}: the upgrade was accepted`)));
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) }));
        });
        ws.once('error', reject);
      });
    for (const path of ['/v1/audio/transcriptions/stream', '/v1/realtime']) {
      for (const model of ['\u0000', 'a\u0001', 'stt-local\u007f']) {
        const res = await upgrade(path, model);
        const where = `${path} ${JSON.stringify(model)}`;
        assert.equal(res.status, 400, `${where}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error.code, http.body.error.code, where);
        assert.equal(res.body.error.type, http.body.error.type, where);
        assert.equal(res.body.error.param, 'model', where);
        assert.match(res.body.error.message, /^Invalid querystring field 'model': must not contain control characters or unpaired surrogates\.$/, where);
      }
    }
  });

  it('caps open sockets per key (429 before the upgrade), and frees the slot on close', async () => {
    const a = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    const b = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    await a.next('transcription_session.created');
    await b.next('transcription_session.created');
    const third = await refusal(connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey }));
    assert.equal(third.status, 429);
    assert.equal(third.body.error.code, 'rate_limit_exceeded');
    const idA = (await a.next('transcription_session.created')).session.id;
    a.ws.close();
    await closedSession(f.gw, idA);
    const c = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    await c.next('transcription_session.created');
    for (const x of [b, c]) x.ws.close();
    await Promise.all([b.closed, c.closed]);
    await closedSession(f.gw, (await b.next('transcription_session.created')).session.id);
    await closedSession(f.gw, (await c.next('transcription_session.created')).session.id);
  });

  it('answers malformed frames with error frames and goes on; an oversized frame closes the socket (1009)', async () => {
    const c = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    const id = (await c.next('transcription_session.created')).session.id;
    c.ws.send('not json');
    c.ws.send('[1,2]');
    c.send({ no: 'type' });
    c.send({ type: 'input_audio_buffer.append', audio: '%%%not base64%%%', event_id: 'event_bad' });
    c.send({ type: 'conversation.item.create' });
    c.send({ type: 'transcription_session.update', session: { turn_detection: { type: 'semantic_vad' } } });
    c.send({ type: 'transcription_session.update', session: { input_audio_format: 'opus' } });
    await c.until((f) => f.filter((x) => x.type === 'error').length >= 7, 5000, 'seven error frames');
    const errors = c.of('error');
    assert.ok(errors.every((e) => e.error.code === 'invalid_request' && e.error.type === 'invalid_request_error' && typeof e.error.message === 'string'));
    assert.equal(errors[3]!.error.event_id, 'event_bad');
    assert.equal(errors[3]!.error.param, 'audio');
    c.send({ type: 'transcription_session.update', session: { turn_detection: { type: 'server_vad', silence_duration_ms: 800 } } });
    const updated = await c.next('transcription_session.updated');
    assert.equal(updated.session.turn_detection.silence_duration_ms, 800);
    c.ws.send(Buffer.alloc(70_000));
    assert.equal(await c.closed, 1009);
    await closedSession(f.gw, id);
  });

  it('session updates: the beta update switches the format before the first audio, not after; a GA update for another session type is refused whole, one with a bad setting applies the rest and names the bad one', async () => {
    const c = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    const id = (await c.next('transcription_session.created')).session.id;
    const errorOf = async (event: object, n: number) => {
      c.send(event);
      await c.until((fr) => fr.filter((x) => x.type === 'error').length >= n, 5000, `error ${n}`);
      return c.of('error')[n - 1]!.error;
    };
    assert.equal(
      (await errorOf({ type: 'session.update', session: { type: 'realtime', audio: { input: { turn_detection: null } } } }, 1)).param,
      'session.type',
    );
    assert.equal(
      (await errorOf({ type: 'session.update', session: { type: 'transcription', audio: { input: { transcription: { model: 'gpt-4o-transcribe' } } } } }, 2))
        .param,
      'session.audio.input.transcription.model',
    );
    assert.equal(
      (await errorOf({ type: 'session.update', session: { type: 'transcription', audio: { input: { format: { type: 'audio/pcmu', rate: 24000 } } } } }, 3))
        .param,
      'session.audio.input.format.rate',
    );
    assert.equal(c.of('session.updated').length + c.of('transcription_session.updated').length, 0, 'nothing applied: every setting of those was refused');
    // A language the model lacks beside valid settings: one error naming it, the rest applied.
    c.send({
      type: 'session.update',
      event_id: 'event_mixed',
      session: {
        type: 'transcription',
        audio: { input: { transcription: { language: 'fr', prompt: 'x' }, turn_detection: null, noise_reduction: { type: 'loud' } } },
      },
    });
    const mixed = (await c.next('session.updated')).session;
    assert.equal(mixed.audio.input.turn_detection, null, 'turn detection off was applied');
    assert.equal('language' in mixed.audio.input.transcription, false, 'auto-detect: no language');
    const errors = c
      .of('error')
      .slice(3)
      .map((e) => e.error);
    assert.deepEqual(
      errors.map((e) => e.param).sort(),
      ['session.audio.input.noise_reduction.type', 'session.audio.input.transcription.language'],
      'only the bad settings, each before session.updated',
    );
    const lang = errors.find((e) => e.param === 'session.audio.input.transcription.language')!;
    assert.equal(lang.code, 'language_not_supported');
    assert.ok(errors.every((e) => e.event_id === 'event_mixed'));
    // A bare `en` is the model's first English region (stt-local: en-US, en-IN, en-GB).
    c.send({ type: 'session.update', session: { type: 'transcription', audio: { input: { transcription: { model: 'stt-local', language: 'en' } } } } });
    await c.until((fr) => fr.filter((x) => x.type === 'session.updated').length >= 2, 5000, 'second session.updated');
    assert.equal(c.of('session.updated')[1]!.session.audio.input.transcription.language, 'en-US');
    assert.equal(c.of('error').length, 5);
    // Beta: μ-law before any audio (OpenAI's g711_ulaw: 8 kHz); turn detection back on.
    c.send({ type: 'transcription_session.update', session: { input_audio_format: 'g711_ulaw', turn_detection: { type: 'server_vad' } } });
    const updated = (await c.next('transcription_session.updated')).session;
    assert.equal(updated.input_audio_format, 'g711_ulaw');
    assert.equal(updated.sample_rate, 8000);
    assert.deepEqual(updated.turn_detection, { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 });
    c.ws.send(Buffer.alloc(800, 0xff)); // 100 ms of μ-law silence
    const late = await errorOf({ type: 'transcription_session.update', session: { input_audio_format: 'pcm16' } }, 6);
    assert.equal(late.param, 'session.input_audio_format');
    c.ws.close();
    const view = await closedSession(f.gw, id);
    assert.equal(view.context.audioMs, 100); // taken as 8 kHz μ-law
  });

  it("a bare language on the query is the model's first region for it, on both URLs", async () => {
    for (const path of ['/v1/audio/transcriptions/stream', '/v1/realtime']) {
      const c = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey, language: 'en' }, {}, path);
      const created = await c.next('transcription_session.created');
      assert.equal(created.session.input_audio_transcription.language, 'en-US', path);
      c.ws.close();
      await closedSession(f.gw, created.session.id);
    }
  });

  it('a client that vanishes (no close frame) is billed once for the audio it sent', async () => {
    const before = await f.balance();
    const c = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    const id = (await c.next('transcription_session.created')).session.id;
    const audio = encode(speech16k(0.5, 0), 'pcm_s16le'); // 3.49 s
    for (let at = 0; at < audio.length; at += 32_000) c.ws.send(audio.subarray(at, at + 32_000));
    await c.next('input_audio_buffer.speech_started');
    c.ws.terminate();
    const view = await closedSession(f.gw, id);
    assert.equal(view.context.ending.reason, 'client_vanished');
    assert.equal(view.context.chargedSeconds, 4);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(before - (await f.balance()), localPrice(4));
  });

  it('after the upgrade, a key revoked mid-session ends it: error frame invalid_api_key, close 1008, the audio billed', async () => {
    const key = await createKey(f.gw.url, f.session, { name: 'revoked-later' });
    const c = await connect(f.gw.url, { model: 'stt-local', api_key: key.api_key });
    const id = (await c.next('transcription_session.created')).session.id;
    c.ws.send(encode(speech16k(0.2, 0), 'pcm_s16le').subarray(0, 32_000)); // 1 s
    assert.equal((await call(f.gw.url, 'DELETE', `/portal/keys/${key.id}`, { token: f.session })).status, 200);
    const err = await c.next('error', 5000);
    assert.equal(err.error.code, 'invalid_api_key');
    await c.next('transcription_session.done');
    assert.equal(await c.closed, 1008);
    const view = await closedSession(f.gw, id);
    assert.equal(view.context.ending.reason, 'unauthorized');
    assert.equal(view.context.chargedSeconds, 1);
  });

  /** A gateway of its own ticking every second, `stt-pricey` at 1 ¢ a second, an account with `cents`. */
  async function ticksOfACent(cents: number): Promise<Funded> {
    const g = await fundedGateway({ realtime: { tickSeconds: 1 } }, cents);
    const put = await call(g.gw.url, 'PUT', '/admin/models/stt-pricey', {
      token: ADMIN_TOKEN,
      body: model([{ provider: 'local', upstream_model: 'pocketsphinx-en-us' }], 60),
    });
    assert.ok(put.status < 300, put.text);
    return g;
  }

  it('a wallet that runs dry mid-session ends it: insufficient_credit error frame, close 1008, the covered ticks charged', async () => {
    const poor = await ticksOfACent(2);
    try {
      const c = await connect(poor.gw.url, { model: 'stt-pricey', api_key: poor.apiKey });
      const id = (await c.next('transcription_session.created')).session.id;
      c.append(encode(speech16k(1, 2), 'pcm_s16le'), 32000); // 6 s: more than two cents' worth
      const err = await c.next('error', 10_000);
      assert.equal(err.error.code, 'insufficient_credit');
      await c.next('transcription_session.done');
      assert.equal(await c.closed, 1008);
      const view = await closedSession(poor.gw, id);
      assert.equal(view.context.chargedSeconds, 2);
      assert.equal(await poor.balance(), 0);
    } finally {
      await poor.gw.destroy();
    }
  });

  it("a key's daily spend cap reached mid-session ends it: rate_limit_exceeded error frame, the ticks that fit charged, the day's spend within the cap", async () => {
    const capped = await ticksOfACent(100);
    try {
      const key = await createKey(capped.gw.url, capped.session, { name: 'capped', cpd: 2 }); // 1 ¢ a second: two ticks
      const c = await connect(capped.gw.url, { model: 'stt-pricey', api_key: key.api_key });
      const id = (await c.next('transcription_session.created')).session.id;
      c.append(encode(speech16k(1, 2), 'pcm_s16le'), 32000); // 6 s
      const err = await c.next('error', 10_000);
      assert.equal(err.error.code, 'rate_limit_exceeded');
      assert.match(err.error.message, /daily spend limit of 2 cents/);
      await c.next('transcription_session.done');
      assert.equal(await c.closed, 1008);
      const view = await closedSession(capped.gw, id);
      assert.equal(view.context.chargedSeconds, 2);
      assert.equal(100_000_000 - (await capped.balance()), 2_000_000, 'two seconds charged, at 1 ¢ each');
    } finally {
      await capped.gw.destroy();
    }
  });

  it('utterance mode: a sync-only route serves the socket, each utterance through the router, failing over between routes', async () => {
    const c = await connect(f.gw.url, { model: 'stt-failover', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    assert.equal(created.session.recognition, 'utterance');
    c.append(encode(speech16k(1, 1), 'pcm_s16le'), 32000);
    const completed = await c.next('conversation.item.input_audio_transcription.completed');
    assert.match(completed.transcript, /^part 1 of \d+ bytes/);
    assert.ok(completed.start >= 0.5 && completed.start < 1.2, `start ${completed.start}`);
    c.ws.close();
    await closedSession(f.gw, created.session.id);
  });

  it('an upstream that hangs is reported as an error frame within the bounded time, the session closes (1011), the audio is billed', async () => {
    upstream.defaultBehaviour = { hang: true };
    try {
      const c = await connect(f.gw.url, { model: 'stt-cloud', api_key: f.apiKey });
      const id = (await c.next('transcription_session.created')).session.id;
      c.append(encode(speech16k(1, 1), 'pcm_s16le'), 32000);
      const committedAt = Date.now();
      await c.next('input_audio_buffer.committed');
      const err = await c.next('error', 10_000);
      assert.ok(Date.now() - committedAt < 5000, `error after ${Date.now() - committedAt} ms`);
      assert.equal(err.error.code, 'model_unavailable');
      await c.next('transcription_session.done');
      assert.equal(await c.closed, 1011);
      const view = await closedSession(f.gw, id);
      assert.equal(view.context.ending.reason, 'upstream_failed');
      assert.equal(view.context.chargedSeconds, 5);
    } finally {
      upstream.defaultBehaviour = {};
    }
  });
});
