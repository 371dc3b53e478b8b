// POST /v1/audio/speech against the seeded offline model tts-local (Debian's espeak-ng): every
// format with the spec's content type, raw streams equal to buffered reads byte for byte, SSE
// events, the official openai client, every offered voice speaking (duration, energy, and
// pocketsphinx hearing the English), romanized Hindi read as Hindi, refusals, billing by characters.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { call, startTestGateway, type TestGateway } from '../helper.ts';
import { balance, FORMATS, chunksOf, fundedKey, has, probe, rms, speak, sseEvents } from './helpers.ts';

const missing = ['espeak-ng', 'ffmpeg', 'ffprobe'].filter((b) => !has(b));
const skip = missing.length > 0 ? `needs ${missing.join(', ')} (scripts/install-debian-packages.sh)` : false;
const TEXT = 'Hello, your balance is two hundred rupees.';

describe('POST /v1/audio/speech with tts-local', { skip }, () => {
  let gw: TestGateway;
  let apiKey: string;
  let session: string;

  before(async () => {
    gw = await startTestGateway();
    ({ apiKey, session } = await fundedKey(gw));
  });
  after(async () => gw?.destroy());

  it('answers every format with the content type of the spec, audio a decoder reads, billed by characters', async () => {
    const before = await balance(gw, session);
    const durations: number[] = [];
    for (const [format, want] of Object.entries(FORMATS)) {
      const res = await speak(gw, apiKey, { model: 'tts-local', input: TEXT, voice: 'en-us', response_format: format });
      assert.equal(res.status, 200, format);
      assert.equal(res.headers.get('content-type'), want.type, format);
      const bytes = Buffer.from(await res.arrayBuffer());
      const p = probe(bytes, want.input);
      assert.equal(p.codec, want.codec, format);
      durations.push(p.duration);
    }
    // The same speech in every format (encoders pad a little).
    assert.ok(Math.min(...durations) > 1.5 && Math.max(...durations) - Math.min(...durations) < 0.2, `durations ${durations}`);
    const mulaw = Buffer.from(
      await (await speak(gw, apiKey, { model: 'tts-local', input: TEXT, voice: 'en-us', response_format: 'mulaw', sample_rate: 24000 })).arrayBuffer(),
    );
    assert.ok(Math.abs(mulaw.length / 8000 - durations[0]!) < 0.2, 'mulaw is 8 kHz whatever sample_rate says');
    // 8 calls of 42 characters at 0.1 cent per 1000: 42 × 100 µ¢ each.
    assert.equal(before - (await balance(gw, session)), 8 * 42 * 100);
  });

  it('streams pcm and mulaw as produced, the same bytes as a buffered read', async () => {
    const long = `${TEXT} `.repeat(12);
    for (const [format, rate] of [
      ['pcm', 16000],
      ['mulaw', 8000],
    ] as const) {
      const body = { model: 'tts-local', input: long, voice: 'en-gb', response_format: format, sample_rate: rate };
      const buffered = Buffer.from(await (await speak(gw, apiKey, body)).arrayBuffer());
      const res = await speak(gw, apiKey, body);
      assert.equal(res.headers.get('transfer-encoding'), 'chunked');
      const chunks = await chunksOf(res);
      assert.ok(chunks.length > 1, `${format}: ${chunks.length} chunks`);
      assert.ok(Buffer.concat(chunks).equals(buffered), `${format}: streamed bytes equal the buffered read`);
      assert.ok(Math.abs(buffered.length / (format === 'pcm' ? 32000 : 8000) - 30) < 15, `${format}: ${buffered.length} bytes`);
    }
  });

  it('streams SSE: speech.audio.delta events of base64 pcm or mulaw, then speech.audio.done', async () => {
    const pcm = Buffer.from(await (await speak(gw, apiKey, { model: 'tts-local', input: TEXT, voice: 'en-us', response_format: 'pcm' })).arrayBuffer());
    const res = await speak(gw, apiKey, { model: 'tts-local', input: TEXT, voice: 'en-us', stream_format: 'sse' });
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const events = sseEvents(await res.text());
    const done = events.pop()!;
    assert.deepEqual(done, { type: 'speech.audio.done', format: 'pcm', sample_rate: 24000, usage: { type: 'characters', characters: 42 } });
    assert.ok(events.length >= 1 && events.every((e) => e.type === 'speech.audio.delta' && Object.keys(e).length === 2));
    assert.ok(Buffer.concat(events.map((e) => Buffer.from(e.audio, 'base64'))).equals(pcm), 'an mp3 request streamed is normalized to pcm, the same audio');

    const mu = sseEvents(
      await (await speak(gw, apiKey, { model: 'tts-local', input: TEXT, voice: 'en-us', stream_format: 'sse', response_format: 'mulaw' })).text(),
    );
    assert.deepEqual({ ...mu.at(-1), usage: undefined }, { type: 'speech.audio.done', format: 'mulaw', sample_rate: 8000, usage: undefined });
  });

  it('works with the official openai client, buffered and streamed', async () => {
    const client = new OpenAI({ apiKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const mp3 = Buffer.from(await (await client.audio.speech.create({ model: 'tts-local', voice: 'en-us', input: TEXT })).arrayBuffer());
    assert.equal(probe(mp3).codec, 'mp3');
    const wav = await client.audio.speech.create({ model: 'tts-local', voice: 'hi', input: 'नमस्ते', response_format: 'wav', speed: 1.5 });
    assert.equal(wav.headers.get('content-type'), 'audio/wav');
    const streamed = await client.audio.speech.create({ model: 'tts-local', voice: 'en-us', input: TEXT, stream_format: 'sse' });
    const events = sseEvents(await streamed.text());
    assert.equal(events.at(-1)!.type, 'speech.audio.done');
    const refused = await client.audio.speech.create({ model: 'tts-local', voice: 'alloy', input: TEXT }).catch((e) => e);
    assert.equal(refused.status, 400);
    assert.equal(refused.code, 'voice_not_supported');
  });

  it('speaks every offered voice: audible speech of a plausible length', async () => {
    const phrases: Record<string, string> = {
      'en-us': 'Good morning',
      'en-us-slt': 'Good morning',
      'en-gb': 'Good morning',
      hi: 'नमस्ते, आपका स्वागत है',
      bn: 'নমস্কার, আপনাকে স্বাগতম',
      gu: 'નમસ્તે, આપનું સ્વાગત છે',
      kn: 'ನಮಸ್ಕಾರ, ಸ್ವಾಗತ',
      ml: 'നമസ്കാരം, സ്വാഗതം',
      mr: 'नमस्कार, आपले स्वागत आहे',
      or: 'ନମସ୍କାର, ସ୍ୱାଗତ',
      pa: 'ਸਤ ਸ੍ਰੀ ਅਕਾਲ, ਜੀ ਆਇਆਂ ਨੂੰ',
      ta: 'வணக்கம், வரவேற்கிறோம்',
      te: 'నమస్కారం, స్వాగతం',
      as: 'নমস্কাৰ, আপোনাক স্বাগতম',
    };
    const model = (await call(gw.url, 'GET', '/v1/models/tts-local', { token: apiKey })).body;
    assert.deepEqual(Object.keys(phrases).sort(), [...model.voices].sort());
    assert.equal(model.max_input_chars, 4096);
    for (const [voice, input] of Object.entries(phrases)) {
      const res = await speak(gw, apiKey, { model: 'tts-local', input, voice, response_format: 'pcm', sample_rate: 16000 });
      assert.equal(res.status, 200, voice);
      const pcm = Buffer.from(await res.arrayBuffer());
      const seconds = pcm.length / 32000;
      assert.ok(seconds > 0.5 && seconds < 6, `${voice}: ${seconds} s`);
      assert.ok(rms(pcm) > 500, `${voice}: energy ${rms(pcm)}`);
    }
  });

  it('pocketsphinx (stt-local) hears what the English voice says', { skip: has('pocketsphinx_continuous') ? false : 'needs pocketsphinx' }, async () => {
    const wav = Buffer.from(
      await (await speak(gw, apiKey, { model: 'tts-local', input: 'go forward ten meters', voice: 'en-us', response_format: 'wav', speed: 0.8 })).arrayBuffer(),
    );
    const form = new FormData();
    form.append('model', 'stt-local');
    form.append('file', new Blob([wav]), 'speech.wav');
    const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form });
    const text = ((await res.json()) as { text: string }).text.toLowerCase();
    const heard = ['go', 'forward', 'ten', 'meters'].filter((w) => text.split(/\s+/).includes(w));
    assert.ok(heard.length >= 2, `heard "${text}"`);
  });

  it('reads romanized Hindi as Hindi: the same audio as the Devanagari', async () => {
    const pcm = async (input: string) =>
      Buffer.from(await (await speak(gw, apiKey, { model: 'tts-local', input, voice: 'hi', response_format: 'pcm' })).arrayBuffer());
    // ITRANS with a long word-final a: "kitna" is कित्ना.
    assert.ok((await pcm('Namaste, kitna hai')).equals(await pcm('नमस्ते, कित्ना है')));
    assert.ok(!(await pcm('Namaste')).equals(await pcm('नमस्ते, कित्ना है')));
  });

  it('refuses an unknown voice, an input over the maximum, a language no voice speaks, an empty input; none charged', async () => {
    const before = await balance(gw, session);
    const refuse = async (body: Record<string, unknown>, code: string, param: string) => {
      const res = await speak(gw, apiKey, { model: 'tts-local', voice: 'en-us', input: TEXT, ...body });
      assert.equal(res.status, 400, code);
      const err = ((await res.json()) as { error: { code: string; param: string } }).error;
      assert.deepEqual([err.code, err.param], [code, param]);
    };
    await refuse({ voice: 'alloy' }, 'voice_not_supported', 'voice');
    await refuse({ input: 'a'.repeat(4097) }, 'input_too_long', 'input');
    await refuse({ language: 'fr-FR' }, 'language_not_supported', 'language');
    await refuse({ input: '   ' }, 'missing_input', 'input');
    await refuse({ response_format: 'ogg' }, 'invalid_request', 'response_format');
    await refuse({ colour: 'blue' }, 'invalid_request', 'colour');
    const unknown = await speak(gw, apiKey, { model: 'nope', voice: 'en-us', input: TEXT });
    assert.equal(unknown.status, 404);
    assert.equal(await balance(gw, session), before);
    // Exactly the maximum is taken.
    const max = await speak(gw, apiKey, { model: 'tts-local', voice: 'en-us', input: 'a '.repeat(2048), response_format: 'pcm', sample_rate: 8000 });
    assert.equal(max.status, 200);
    await max.body!.cancel();
  });

  it('refuses an input or instructions holding a NUL or an unpaired surrogate, as free text is refused elsewhere; none charged', async () => {
    const refused: string[] = [];
    const understand = await call(gw.url, 'POST', '/v1/understand', { token: apiKey, body: { model: 'intent-demo', text: 'a\u0000' } });
    assert.equal(understand.status, 400, understand.text);
    const rule = String(understand.body.error.message).replace("'text'", "'FIELD'");
    for (const [field, value] of [
      ['input', 'Hello\u0000 there'],
      ['input', 'Hello \ud800 there'],
      ['input', 'Hello \udc00'],
      ['instructions', 'calm\u0000'],
    ] as const) {
      const res = await speak(gw, apiKey, { model: 'tts-local', voice: 'en-us', input: TEXT, response_format: 'pcm', [field]: value });
      const text = await res.text();
      assert.equal(res.status, 400, `${field} ${JSON.stringify(value)}: ${res.headers.get('content-type')} ${text.slice(0, 200)}`);
      const body = JSON.parse(text) as { error: { code: string; param: string; message: string } };
      assert.deepEqual([body.error.code, body.error.param], ['invalid_request', field]);
      assert.equal(body.error.message, rule.replace('FIELD', field));
      refused.push(res.headers.get('x-request-id')!);
    }
    // Nothing held or charged: no usage record (the wallet is not compared: the test before settles its own call late).
    await new Promise((r) => setTimeout(r, 200));
    const records = (await call(gw.url, 'GET', '/portal/usage/records?limit=100', { token: session })).body.data as { request_id: string }[];
    assert.deepEqual(
      records.filter((r) => refused.includes(r.request_id)),
      [],
    );
    // A character outside the BMP (a surrogate pair) is text like any other.
    const astral = await speak(gw, apiKey, { model: 'tts-local', voice: 'en-us', input: 'Hello \u{1F600} there', response_format: 'pcm', sample_rate: 8000 });
    assert.equal(astral.status, 200);
    await astral.body!.cancel();
  });
});
