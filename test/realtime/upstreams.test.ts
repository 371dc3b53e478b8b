// Realtime sockets served over the providers' own streaming protocols (routes with `realtime: true`),
// against local fakes speaking OpenAI Realtime transcription, Sarvam streaming and Deepgram live:
// the gateway's VAD commits each utterance on the upstream socket, the audio goes in the format the
// upstream takes (G.711 passed through, pcm16 at 24 kHz for OpenAI otherwise), deltas stream,
// failover happens between utterances, and an upstream that dies or stalls mid-utterance ends the
// session with an error frame within a bounded time, billed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, call } from '../helper.ts';
import { FakeRealtimeUpstream, type RealtimeProtocol } from '../fakes/realtime-upstreams.ts';
import { closedSession, connect, encode, fundedGateway, skipSpeech, speech16k, to8k, type Client, type Funded } from './helpers.ts';

const COMPLETED = 'conversation.item.input_audio_transcription.completed';
const model = (routes: object[]) => ({ type: 'stt', owned_by: 'acme', languages: ['en-US'], streaming: true, pricing: { cents_per_minute: 0.6 }, routes });
const route = (fake: FakeRealtimeUpstream, upstreamModel = 'up-model') => ({
  provider: fake.protocol,
  base_url: fake.baseUrl,
  api_key: 'up-key',
  upstream_model: upstreamModel,
  realtime: true,
});

/** Sends `n` utterances of 8 kHz μ-law (speech with silence around it) as binary frames of 100 ms. */
function sendMulaw(c: Client, n = 1): void {
  const one = encode(to8k(speech16k(1, 1.5)), 'mulaw');
  const bytes = Buffer.concat(Array.from({ length: n }, () => one));
  for (let at = 0; at < bytes.length; at += 800) c.ws.send(bytes.subarray(at, at + 800));
}

/** The same, paced: a 100 ms frame every `everyMs` (the speaker talking at 100/everyMs × real time). */
async function streamMulaw(c: Client, everyMs = 50): Promise<void> {
  const bytes = encode(to8k(speech16k(1, 1.5)), 'mulaw');
  for (let at = 0; at < bytes.length; at += 800) {
    c.ws.send(bytes.subarray(at, at + 800));
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

describe('realtime socket over streaming upstreams', { skip: skipSpeech }, () => {
  let f: Funded;
  const fakes = new Map<RealtimeProtocol, FakeRealtimeUpstream>();
  const put = async (id: string, body: object) => {
    const res = await call(f.gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body });
    assert.ok(res.status < 300, res.text);
  };

  before(async () => {
    f = await fundedGateway({ realtime: { utteranceTimeoutMs: 1500 } });
    for (const p of ['openai', 'sarvam', 'deepgram'] as const) fakes.set(p, await FakeRealtimeUpstream.start(p));
  });
  after(async () => {
    await f?.gw.destroy();
    for (const fake of fakes.values()) await fake.close();
  });

  for (const protocol of ['openai', 'sarvam', 'deepgram'] as const) {
    it(`${protocol}: 8 kHz μ-law goes through as G.711, the VAD commits on the upstream socket, its text comes back`, async () => {
      const fake = fakes.get(protocol)!;
      fake.mode = 'ok';
      const before = fake.committedBytes.length;
      await put(`stt-${protocol}-rt`, model([route(fake)]));
      const c = await connect(f.gw.url, { model: `stt-${protocol}-rt`, sample_rate: '8000', encoding: 'mulaw', api_key: f.apiKey });
      const created = await c.next('transcription_session.created');
      assert.equal(created.session.recognition, 'streaming');
      sendMulaw(c);
      const completed = await c.next(COMPLETED);
      assert.equal(completed.transcript, fake.text);
      const deltas = c.of('conversation.item.input_audio_transcription.delta').filter((d) => d.item_id === completed.item_id);
      assert.equal(deltas.map((d) => d.delta).join(''), fake.text);
      if (protocol === 'openai') assert.ok(deltas.length > 1, 'OpenAI deltas are streamed one by one');
      // The utterance (≈3.7 s of speech and padding) reached the upstream as one byte a sample.
      const got = fake.committedBytes[before]!;
      assert.ok(got >= 8000 * 3 && got <= 8000 * 6, `${got} bytes committed`);
      const q = fake.queries.at(-1)!;
      if (protocol === 'openai') {
        assert.equal(q.get('intent'), 'transcription');
        assert.equal(fake.sessionUpdates.at(-1).input_audio_format, 'g711_ulaw');
        assert.equal(fake.sessionUpdates.at(-1).turn_detection, null);
        assert.equal(fake.sessionUpdates.at(-1).input_audio_transcription.model, 'up-model');
      } else {
        assert.equal(q.get('encoding'), 'mulaw');
        assert.equal(q.get('sample_rate'), '8000');
      }
      c.ws.close();
      const view = await closedSession(f.gw, created.session.id);
      assert.ok(view.context.chargedSeconds >= 5);
    });
  }

  for (const protocol of ['sarvam', 'deepgram'] as const) {
    it(`${protocol}: partial results come as deltas while the speaker talks (before speech_stopped), the words that held still, then the rest with completed`, async () => {
      const fake = fakes.get(protocol)!;
      fake.mode = 'ok';
      await put(`stt-${protocol}-rt`, model([route(fake)]));
      const c = await connect(f.gw.url, { model: `stt-${protocol}-rt`, sample_rate: '8000', encoding: 'mulaw', api_key: f.apiKey });
      const created = await c.next('transcription_session.created');
      await streamMulaw(c);
      const completed = await c.next(COMPLETED);
      assert.equal(completed.transcript, fake.text);
      const mine = (type: string) => c.frames.findIndex((x) => x.type === type && x.item_id === completed.item_id);
      const deltas = c.of('conversation.item.input_audio_transcription.delta').filter((d) => d.item_id === completed.item_id);
      assert.ok(deltas.length >= 3, `${deltas.length} deltas`);
      assert.ok(
        mine('conversation.item.input_audio_transcription.delta') < mine('input_audio_buffer.speech_stopped'),
        `a delta before speech_stopped: ${c.frames.map((x) => x.type).join(', ')}`,
      );
      assert.ok(mine('input_audio_buffer.speech_started') < mine('conversation.item.input_audio_transcription.delta'));
      // Appendable: no cut word ever went out (the hypotheses' last words were cut short).
      assert.equal(deltas.map((d) => d.delta).join(''), fake.text);
      assert.ok(c.frames.lastIndexOf(deltas.at(-1)!) < c.frames.indexOf(completed));
      c.ws.close();
      await closedSession(f.gw, created.session.id);
    });
  }

  it('openai: 16 kHz pcm16 is resampled to 24 kHz pcm16', async () => {
    const fake = fakes.get('openai')!;
    fake.mode = 'ok';
    const before = fake.committedBytes.length;
    await put('stt-openai-rt', model([route(fake)]));
    const c = await connect(f.gw.url, { model: 'stt-openai-rt', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    c.append(encode(speech16k(1, 1.5), 'pcm_s16le'), 32000);
    await c.next(COMPLETED);
    assert.equal(fake.sessionUpdates.at(-1).input_audio_format, 'pcm16');
    // Every sample streams (speech16k: 5.5 s); the commit covers all of it since the socket opened.
    const got = fake.committedBytes[before]!;
    assert.ok(got >= 24000 * 2 * 3.5 && got <= 24000 * 2 * 5.6, `${got} bytes at 24 kHz`);
    c.ws.close();
    await closedSession(f.gw, created.session.id);
  });

  it('two utterances committed before the first is answered: both answered, in order, on one socket', async () => {
    const fake = fakes.get('openai')!;
    fake.mode = 'ok';
    const conns = fake.connections;
    await put('stt-openai-rt', model([route(fake)]));
    const c = await connect(f.gw.url, { model: 'stt-openai-rt', sample_rate: '8000', encoding: 'mulaw', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    sendMulaw(c, 2);
    await c.until((fr) => fr.filter((x) => x.type === COMPLETED || x.type === 'error').length >= 2, 20_000, 'two completed');
    assert.deepEqual(c.of('error'), []);
    const ids = c.of('input_audio_buffer.committed').map((x) => x.item_id);
    assert.deepEqual(
      c.of(COMPLETED).map((x) => x.item_id),
      ids.slice(0, 2),
    );
    assert.equal(fake.connections, conns + 1);
    c.ws.close();
    await closedSession(f.gw, created.session.id);
  });

  it('fails over to the next route between utterances when the upstream closes after an answer', async () => {
    const first = fakes.get('openai')!;
    const second = fakes.get('deepgram')!;
    first.mode = 'close-after-answer';
    second.mode = 'ok';
    second.text = 'answered by the second route';
    const secondBefore = second.connections;
    await put('stt-failover-rt', model([route(first), route(second)]));
    const c = await connect(f.gw.url, { model: 'stt-failover-rt', sample_rate: '8000', encoding: 'mulaw', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    sendMulaw(c);
    await c.next(COMPLETED);
    await new Promise((r) => setTimeout(r, 300)); // the first route drops its socket after answering
    sendMulaw(c);
    await c.until((fr) => fr.filter((x) => x.type === COMPLETED).length >= 2, 20_000, 'two completed');
    const [one, two] = c.of(COMPLETED);
    assert.equal(one!.transcript, first.text);
    assert.equal(two!.transcript, 'answered by the second route');
    assert.equal(c.of('error').length, 0);
    assert.equal(second.connections, secondBefore + 1);
    c.ws.close();
    await closedSession(f.gw, created.session.id);
    first.mode = 'ok';
    second.text = first.text;
  });

  for (const [mode, what] of [
    ['close-on-commit', 'closes'],
    ['stall', 'stalls'],
  ] as const) {
    it(`an upstream that ${what} inside an utterance: error frame within a bounded time, close 1011, billed`, async () => {
      const fake = fakes.get('sarvam')!;
      fake.mode = mode;
      await put('stt-broken-rt', model([route(fake), route(fakes.get('deepgram')!)]));
      const c = await connect(f.gw.url, { model: 'stt-broken-rt', sample_rate: '8000', encoding: 'mulaw', api_key: f.apiKey });
      const created = await c.next('transcription_session.created');
      sendMulaw(c);
      const committed = await c.next('input_audio_buffer.committed');
      const t0 = Date.now();
      const err = await c.next('error', 5000);
      const took = Date.now() - t0;
      assert.equal(err.error.code, 'model_unavailable');
      // close: at once; stall: the utteranceTimeoutMs (1.5 s here).
      assert.ok(took < (mode === 'stall' ? 2500 : 1000), `error after ${took} ms`);
      assert.equal(c.of(COMPLETED).filter((x) => x.item_id === committed.item_id).length, 0);
      assert.equal(await c.closed, 1011);
      const view = await closedSession(f.gw, created.session.id);
      assert.ok(view.context.chargedSeconds >= 5, `charged ${view.context.chargedSeconds}`);
      fake.mode = 'ok';
    });
  }

  it("sockets open through the router's policy: a route that keeps refusing cools down, and later sessions skip it", async () => {
    const refusing = await FakeRealtimeUpstream.start('deepgram');
    try {
      const good = fakes.get('openai')!;
      good.mode = 'ok';
      await put('stt-cooling-rt', model([{ ...route(refusing), api_key: 'wrong' }, route(good)]));
      for (let session = 1; session <= 5; session++) {
        const c = await connect(f.gw.url, { model: 'stt-cooling-rt', sample_rate: '8000', encoding: 'mulaw', api_key: f.apiKey });
        const created = await c.next('transcription_session.created');
        sendMulaw(c);
        assert.equal((await c.next(COMPLETED)).transcript, good.text, `session ${session} answered by the good route`);
        c.ws.close();
        await closedSession(f.gw, created.session.id);
      }
      // The router's threshold is 3 consecutive failures: the first three sessions tried it first.
      assert.equal(refusing.refused, 3, 'the cooling route was not tried again');
    } finally {
      await refusing.close();
    }
  });

  it('a refused upstream (bad key) on the only route: the first utterance gets an error frame, not a hang', async () => {
    const fake = fakes.get('deepgram')!;
    await put('stt-badkey-rt', model([{ ...route(fake), api_key: 'wrong' }]));
    const c = await connect(f.gw.url, { model: 'stt-badkey-rt', sample_rate: '8000', encoding: 'mulaw', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    sendMulaw(c);
    const err = await c.next('error', 5000);
    assert.equal(err.error.code, 'model_unavailable');
    assert.equal(await c.closed, 1011);
    await closedSession(f.gw, created.session.id);
  });
});
