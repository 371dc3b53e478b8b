// POST /v1/audio/speech through an OpenAI-compatible upstream (a fake speaking OpenAI's wire
// format): its format passed through untouched when it is the one asked for, converted otherwise;
// failover before the first audio byte and never after; a client leaving mid-stream pays for the
// characters whose audio it was sent.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ADMIN_TOKEN, call, startTestGateway, type TestGateway } from '../helper.ts';
import type { FakeServer } from '../fakes/fake-server.ts';
import { fakeSpeechAudio, fakeSpeechPcm, startSpeechUpstream } from '../fakes/openai-speech-upstream.ts';
import { balance, chunksOf, fundedKey, has, probe, speak, sseEvents } from './helpers.ts';

const skip = has('ffmpeg') ? false : 'needs ffmpeg (scripts/install-debian-packages.sh)';
const TEXT = 'Your call is important to us.'; // 29 characters: 1.74 s of the fake's tone
const PRICE = 1; // cent per 1000 characters: 1000 µ¢ a character

describe('POST /v1/audio/speech through an OpenAI-compatible upstream', { skip }, () => {
  let gw: TestGateway;
  let a: FakeServer;
  let b: FakeServer;
  let apiKey: string;
  let session: string;

  before(async () => {
    [a, b] = await Promise.all([startSpeechUpstream(), startSpeechUpstream()]);
    gw = await startTestGateway();
    ({ apiKey, session } = await fundedKey(gw));
    const route = (fake: FakeServer) => ({
      provider: 'openai',
      base_url: `${fake.url}/v1`,
      api_key: 'sk-up',
      upstream_model: 'gpt-4o-mini-tts',
      timeout_ms: 2000,
    });
    const put = await call(gw.url, 'PUT', '/admin/models/tts-openai', {
      token: ADMIN_TOKEN,
      body: {
        type: 'tts',
        owned_by: 'openai',
        voices: ['alloy', 'nova'],
        max_input_chars: 2000,
        pricing: { cents_per_1k_chars: PRICE },
        routes: [route(a), route(b)],
      },
    });
    assert.ok(put.status < 300, put.text);
  });
  after(async () => {
    await gw?.destroy();
    await Promise.all([a?.close(), b?.close()]);
  });
  beforeEach(() => {
    a.requests.length = 0;
    b.requests.length = 0;
  });

  it("passes the upstream's format through untouched when it is the one asked for", async () => {
    for (const format of ['mp3', 'opus', 'flac', 'pcm']) {
      const res = await speak(gw, apiKey, { model: 'tts-openai', input: TEXT, voice: 'nova', response_format: format, speed: 1.25, instructions: 'calm' });
      assert.equal(res.status, 200);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(fakeSpeechAudio(TEXT, format)), format);
    }
    assert.deepEqual(
      a.requests.map((r) => r.body.response_format),
      ['mp3', 'opus', 'flac', 'pcm'],
    );
    assert.deepEqual(a.requests[0]!.body, { model: 'gpt-4o-mini-tts', input: TEXT, voice: 'nova', response_format: 'mp3', speed: 1.25, instructions: 'calm' });
    assert.equal(a.requests[0]!.headers.authorization, 'Bearer sk-up');
  });

  it('converts what the upstream does not produce: pcm at other rates and mulaw from its 24 kHz pcm', async () => {
    const pcm16 = Buffer.from(
      await (await speak(gw, apiKey, { model: 'tts-openai', input: TEXT, voice: 'nova', response_format: 'pcm', sample_rate: 16000 })).arrayBuffer(),
    );
    const mulaw = Buffer.from(await (await speak(gw, apiKey, { model: 'tts-openai', input: TEXT, voice: 'nova', response_format: 'mulaw' })).arrayBuffer());
    assert.deepEqual(
      a.requests.map((r) => r.body.response_format),
      ['pcm', 'pcm'],
    );
    const samples = fakeSpeechPcm(TEXT).length / 2;
    assert.equal(pcm16.length, Math.round((samples * 2) / 3) * 2);
    assert.equal(mulaw.length, samples / 3);
    assert.ok(Math.abs(probe(mulaw, ['-f', 'mulaw', '-ar', '8000', '-ac', '1']).duration - 1.74) < 0.01);
  });

  it('fails over before the first audio byte: an error status, or headers and then nothing', async () => {
    const before = await balance(gw, session);
    a.next({ status: 503 });
    const first = await speak(gw, apiKey, { model: 'tts-openai', input: TEXT, voice: 'alloy', response_format: 'pcm' });
    assert.ok(Buffer.from(await first.arrayBuffer()).equals(fakeSpeechPcm(TEXT)));
    a.next({ closeAfterChunks: 0 });
    const second = await speak(gw, apiKey, { model: 'tts-openai', input: TEXT, voice: 'alloy', stream_format: 'sse' });
    const events = sseEvents(await second.text());
    assert.ok(Buffer.concat(events.slice(0, -1).map((e) => Buffer.from(e.audio, 'base64'))).equals(fakeSpeechPcm(TEXT)));
    assert.equal(a.requests.length, 2);
    assert.equal(b.requests.length, 2);
    // Each charged once, in full: 29 characters at 1000 µ¢.
    assert.equal(before - (await balance(gw, session)), 2 * 29 * 1000);
  });

  it('never fails over after the first audio byte: the body is cut short, the audio sent is charged', async () => {
    const before = await balance(gw, session);
    a.next({ closeAfterChunks: 3 });
    const res = await speak(gw, apiKey, { model: 'tts-openai', input: TEXT, voice: 'alloy', response_format: 'pcm' });
    assert.equal(res.status, 200);
    const got: Buffer[] = [];
    const error = await (async () => {
      for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) got.push(Buffer.from(c));
    })().then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(error, 'the client sees an incomplete body, not a complete-looking one');
    assert.equal(b.requests.length, 0);
    const sent = Buffer.concat(got).length;
    assert.equal(sent, 3 * 4800);
    await sleep(50);
    // 0.3 s of audio sent, at 15 characters a second (the audio was not all produced): 5 characters.
    assert.equal(before - (await balance(gw, session)), 5 * 1000);
  });

  it('a client leaving mid-stream pays for the characters whose audio it was sent; the upstream is let go', async () => {
    const before = await balance(gw, session);
    a.next({ chunkDelayMs: 100 });
    const abort = new AbortController();
    const res = await speak(gw, apiKey, { model: 'tts-openai', input: TEXT.repeat(4), voice: 'alloy', response_format: 'pcm' }, abort.signal);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let got = 0;
    while (got < 2 * 4800) got += (await reader.read()).value!.length;
    abort.abort();
    await a.requests[0]!.ended;
    assert.ok(a.requests[0]!.closedEarly, 'the upstream request was closed');
    await sleep(100);
    const charged = (before - (await balance(gw, session))) / 1000;
    // About 0.2 s of 116 characters' audio was sent: 3 or 4 characters (what reached the socket), not 116.
    assert.ok(charged >= 3 && charged <= 5, `charged ${charged} characters`);
    // A stream whose audio was all produced is charged by share: the whole stream, 29 characters.
    const whole = await chunksOf(await speak(gw, apiKey, { model: 'tts-openai', input: TEXT, voice: 'alloy', response_format: 'pcm' }));
    assert.equal(Buffer.concat(whole).length, fakeSpeechPcm(TEXT).length);
  });
});
