// tts-local's festival voice `en-us-slt` (Debian's festival with festvox-us-slt-hts) through POST
// /v1/audio/speech: listed beside espeak-ng's voices in /v1/models, every format as espeak-ng's
// voices answer it and billed alike, streamed sentence by sentence (the first sentence's audio is
// with the client while festival still synthesizes the rest), hostile text spoken as text and never
// run as festival's Scheme, and recognised by stt-local (pocketsphinx) better than espeak-ng's
// `en-us` on the same sentences; the README demo's simulated callee speaks with it (its call:
// test/voice/demo-call.test.ts).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { samplesOf } from '../../src/speech/pcm.ts';
import { wavOf } from '../../src/speech/wav.ts';
import { wordErrorRate } from '../../src/speech/wer.ts';
import { call } from '../helper.ts';
import { balance, children, FORMATS, fundedGateway, has, probe, rms, speak } from './helpers.ts';

const missing = ['festival', 'ffmpeg', 'ffprobe', 'espeak-ng'].filter((b) => !has(b));
if (!existsSync('/usr/share/festival/voices/us/cmu_us_slt_arctic_hts')) missing.push('festvox-us-slt-hts');
const skip = missing.length > 0 ? `needs ${missing.join(', ')} (scripts/install-debian-packages.sh)` : false;
const VOICE = 'en-us-slt';
const TEXT = 'Hello, your balance is two hundred rupees.';

describe(`POST /v1/audio/speech with tts-local's festival voice ${VOICE}`, { skip }, () => {
  const ctx = fundedGateway();

  const pcm16k = async (input: string, voice: string) => {
    const res = await speak(ctx.gw, ctx.apiKey, { model: 'tts-local', input, voice, response_format: 'pcm', sample_rate: 16000 });
    assert.equal(res.status, 200, await res.clone().text());
    return Buffer.from(await res.arrayBuffer());
  };

  it('is listed in /v1/models beside every espeak-ng voice, which all still speak', async () => {
    const model = (await call(ctx.gw.url, 'GET', '/v1/models/tts-local', { token: ctx.apiKey })).body;
    assert.ok(model.voices.includes(VOICE), JSON.stringify(model.voices));
    for (const v of ['en-us', 'en-gb', 'hi', 'mr', 'te']) assert.ok(model.voices.includes(v), v);
    const listed = (await call(ctx.gw.url, 'GET', '/v1/models', { token: ctx.apiKey })).body.data.find((m: { id: string }) => m.id === 'tts-local');
    assert.deepEqual(listed.voices, model.voices);
    for (const voice of ['en-us', VOICE]) assert.ok(rms(await pcm16k('Good morning', voice)) > 500, voice);
  });

  it('answers every format with the content type of the spec and audio a decoder reads, billed by characters', async () => {
    const before = await balance(ctx.gw, ctx.session);
    const durations: number[] = [];
    for (const [format, want] of Object.entries(FORMATS)) {
      const res = await speak(ctx.gw, ctx.apiKey, { model: 'tts-local', input: TEXT, voice: VOICE, response_format: format });
      assert.equal(res.status, 200, format);
      assert.equal(res.headers.get('content-type'), want.type, format);
      const p = probe(Buffer.from(await res.arrayBuffer()), want.input);
      assert.equal(p.codec, want.codec, format);
      durations.push(p.duration);
    }
    assert.ok(Math.min(...durations) > 1.5 && Math.max(...durations) - Math.min(...durations) < 0.2, `durations ${durations}`);
    const sse = await speak(ctx.gw, ctx.apiKey, { model: 'tts-local', input: TEXT, voice: VOICE, stream_format: 'sse' });
    assert.match(await sse.text(), /"type":"speech.audio.done"/);
    // 8 calls of 42 characters at 0.1 cent per 1000, as espeak-ng's voices: 42 × 100 µ¢ each.
    assert.equal(before - (await balance(ctx.gw, ctx.session)), 8 * 42 * 100);
    // speed: the same text faster is shorter.
    const fast = await speak(ctx.gw, ctx.apiKey, { model: 'tts-local', input: TEXT, voice: VOICE, response_format: 'pcm', speed: 1.5 });
    const seconds = (await fast.arrayBuffer()).byteLength / 48_000;
    assert.ok(seconds < durations[5]! * 0.8 && seconds > durations[5]! * 0.5, `${seconds} s at 1.5× against ${durations[5]} s`);
  });

  it("streams sentence by sentence: the first sentence's audio arrives while festival still speaks the rest", async (t) => {
    const sentences = [
      'Thank you for calling your bank.',
      'Your last transaction was a withdrawal of two thousand rupees at an ATM.',
      'If the machine did not give you the cash, we will raise a dispute for you.',
      'The amount is usually returned to your account within five working days.',
      'Please keep your card and your phone with you until then.',
      'Is there anything else I can help you with today?',
    ];
    const started = performance.now();
    const res = await speak(ctx.gw, ctx.apiKey, { model: 'tts-local', input: sentences.join(' '), voice: VOICE, response_format: 'pcm', sample_rate: 16000 });
    assert.equal(res.status, 200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    const firstMs = performance.now() - started;
    assert.ok(!first.done && first.value.length > 0);
    const running = children('festival');
    let bytes = first.value.length;
    for (let r = await reader.read(); !r.done; r = await reader.read()) bytes += r.value.length;
    const totalMs = performance.now() - started;
    assert.equal(running.length, 1, 'festival was still synthesizing when the first audio reached the client');
    assert.ok(bytes / 32_000 > 15, `${bytes / 32_000} s of speech`);
    t.diagnostic(
      `${sentences.length} sentences, ${(bytes / 32_000).toFixed(1)} s of speech: first byte ${firstMs.toFixed(0)} ms, whole ${totalMs.toFixed(0)} ms`,
    );
  });

  it('speaks hostile text as text: Scheme, a string break-out and markup are read aloud, never run', async () => {
    const marker = `/tmp/gw-festival-${randomBytes(6).toString('hex')}`;
    const hostile = [
      `(system "touch ${marker}")`,
      `")(system \\"touch ${marker}\\")("`,
      `(begin (system "touch ${marker}") (quit))`,
      `<SABLE><AUDIO SRC="/etc/passwd"/>hello</SABLE>`,
      `\u0001\u0002 AUDIO 64\n (system "touch ${marker}")`,
    ];
    for (const input of hostile) {
      const pcm = await pcm16k(input, VOICE);
      assert.ok(pcm.length / 32_000 > 1 && rms(pcm) > 300, `${JSON.stringify(input)}: ${pcm.length / 32_000} s, energy ${rms(pcm)}`);
    }
    assert.equal(existsSync(marker), false, 'no Scheme from the text was evaluated');
    // Text festival has no word for (another script, emoji) is a short silence, not an error.
    for (const input of ['नमस्ते', '😀😀', '...']) assert.ok((await pcm16k(input, VOICE)).length > 0, input);
  });

  it('refuses a language the voice does not speak, as espeak-ng voices do', async () => {
    const res = await speak(ctx.gw, ctx.apiKey, { model: 'tts-local', input: TEXT, voice: VOICE, language: 'hi-IN' });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { param: string } }).error.param, 'language');
  });

  it('is recognised by stt-local (pocketsphinx, 16 kHz) with a lower word error rate than espeak-ng en-us', async (t) => {
    const sentences = [
      'my internet is not working since this morning',
      'the money was debited but the ATM gave no cash',
      'I want to raise a dispute for two thousand rupees',
      'please send me the statement for last month',
      'no thank you that is all',
    ];
    // One upload a voice: its five sentences, each spoken alone, a second of silence apart (the
    // engine's detector cuts them into five utterances again). An upload starts an engine of its own
    // (~1 s of CPU loading the model): two of them, not ten, for the same sentences heard.
    const transcribe = async (pcm: Buffer) => {
      const form = new FormData();
      form.append('model', 'stt-local');
      form.append('file', new Blob([wavOf(samplesOf(pcm), 16000)]), 'speech.wav');
      const res = await fetch(`${ctx.gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${ctx.apiKey}` }, body: form });
      assert.equal(res.status, 200);
      return ((await res.json()) as { text: string }).text;
    };
    const gap = Buffer.alloc(32_000); // 1 s at 16 kHz
    const wer: Record<string, number> = {};
    for (const voice of ['en-us', VOICE]) {
      const spoken: Buffer[] = [];
      for (const reference of sentences) spoken.push(gap, await pcm16k(reference, voice));
      const pair = { reference: sentences.join(' '), hypothesis: await transcribe(Buffer.concat([...spoken, gap])) };
      wer[voice] = wordErrorRate([pair]);
      t.diagnostic(`${voice}: WER ${(wer[voice]! * 100).toFixed(1)} % — "${pair.hypothesis}"`);
    }
    assert.ok(wer[VOICE]! < wer['en-us']!, JSON.stringify(wer));
    assert.ok(wer[VOICE]! <= 0.35, JSON.stringify(wer));
  });

  // The call itself, heard with the pack's language models, is test/voice/demo-call.test.ts's: one
  // real-time demo call for the suite (this file placed the same call and heard the same callee).
  it("the README demo's simulated callee (config/default.json) speaks with it", () => {
    const callee = ctx.gw.config.voice.simulator.callees.find((c) => c.to === '*')!;
    const voices = callee.steps.flatMap((s) => ('say' in s ? [s.voice] : []));
    assert.deepEqual(voices, [VOICE, VOICE]);
  });
});
