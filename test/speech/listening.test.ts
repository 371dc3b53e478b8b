// The listening stage keeps the words (issue 40, item 4): festival's `en-us-slt` ("yes please go
// ahead", a clean synthetic voice: a -80..-65 dBFS lead-in, then the word) heard by the detector
// from its first word, the call path's utterance with its whole prefix padding, and the realtime
// socket's round trip (tts-local → /v1/realtime?intent=transcription, stt-local, server_vad, 24 kHz
// pcm16 in 100 ms chunks) transcribing every word. Before, the first word set the detector's noise
// floor to its own level: the voice was found 320 ms late, "yes" was missing from the call's
// utterance and, with a client's 100 ms prefix padding, from the socket's transcript.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { g711Decode, g711Encode } from '../../src/speech/g711.ts';
import { Listener, type HeardUtterance } from '../../src/speech/listening.ts';
import { samplesOf } from '../../src/speech/pcm.ts';
import { loadResamplers, type Resamplers } from '../../src/speech/resample.ts';
import { levelDb, loadVoiceDetectors, type VoiceDetectors } from '../../src/speech/vad.ts';
import { localSpeak } from '../../src/providers/local/speak.ts';
import type { ResolvedRoute } from '../../src/providers/types.ts';
import { connect, fundedGateway, skipSpeech, type Funded } from '../realtime/helpers.ts';

const has = (bin: string) =>
  execFileSync('sh', ['-c', `command -v ${bin} || true`])
    .toString()
    .trim() !== '';
const skip =
  !has('festival') || !existsSync('/usr/share/festival/voices/us/cmu_us_slt_arctic_hts')
    ? 'needs festival and festvox-us-slt-hts (scripts/install-debian-packages.sh)'
    : skipSpeech;
const SENTENCE = 'yes please go ahead';

/** The sentence in festival's voice, 16 kHz PCM16 (festival run once: every test hears the same words). */
async function festivalSpeech(): Promise<{ pcm: Buffer; rate: number }> {
  const audio = await localSpeak().speak(
    { id: 'tts-local#0' } as ResolvedRoute,
    { input: SENTENCE, voice: 'en-us-slt', format: 'pcm', sampleRate: 16000 },
    new AbortController().signal,
  );
  const parts: Buffer[] = [];
  for await (const c of audio.chunks) parts.push(c);
  return { pcm: Buffer.concat(parts), rate: audio.sampleRate! };
}

/** The sentence at `rate` (SpeexDSP), with `leadS` and `tailS` of digital silence around it. */
async function spoken(audio: { pcm: Buffer; rate: number }, resamplers: Resamplers, rate: number, leadS: number, tailS: number): Promise<Int16Array> {
  const r = resamplers.create({ from: audio.rate, to: rate, quality: 5 });
  const speech = Int16Array.from([...r.process(samplesOf(audio.pcm)), ...r.flush()]);
  r.destroy();
  const out = new Int16Array(Math.round((leadS + tailS) * rate) + speech.length);
  out.set(speech, Math.round(leadS * rate));
  return out;
}

/** Where the voice begins: the first 20 ms frame above -45 dBFS, in samples. */
function voiceOnset(s: Int16Array, rate: number): number {
  const n = rate / 50;
  for (let at = 0; at + n <= s.length; at += n) if (levelDb(s.subarray(at, at + n)) > -45) return at;
  throw new Error('no voice');
}

describe('the listening stage keeps the words of a clean synthetic voice', { skip }, () => {
  let detectors: VoiceDetectors;
  let resamplers: Resamplers;
  let speech: { pcm: Buffer; rate: number };
  before(async () => {
    [detectors, resamplers, speech] = await Promise.all([loadVoiceDetectors(), loadResamplers(), festivalSpeech()]);
  });

  for (const rate of [16000, 8000] as const) {
    it(`${rate / 1000} kHz${rate === 8000 ? ' μ-law' : ''}: the detector hears the voice from its first word`, async () => {
      let audio = await spoken(speech, resamplers, rate, 0.5, 1);
      if (rate === 8000) audio = g711Decode('mulaw', g711Encode('mulaw', audio));
      const onsetMs = (voiceOnset(audio, rate) * 1000) / rate;
      const d = detectors.create({ sampleRate: rate, prefix_padding_ms: 300, silence_duration_ms: 500 });
      const events = [...d.push(audio), ...d.flush()];
      d.destroy();
      assert.equal(events.length, 2, JSON.stringify(events)); // one speech, not "yes" dropped and the rest heard
      const started = events[0]!;
      assert.equal(started.type, 'speech_started');
      assert.ok(Math.abs(started.onset_ms - onsetMs) <= 40, `onset ${started.onset_ms} ms, the voice at ${onsetMs} ms`);
    });
  }

  it("a call's utterance (8 kHz μ-law in 20 ms frames, as src/voice/listening.ts listens) keeps its whole prefix padding", async () => {
    const audio = g711Decode('mulaw', g711Encode('mulaw', await spoken(speech, resamplers, 8000, 1, 1)));
    const heard: HeardUtterance[] = [];
    const listener = new Listener(
      { rate: 8000, detectors, detection: { prefixPaddingMs: 300, silenceMs: 700 }, maxUtteranceMs: 15_000, bufferMs: 17_300, keepExtraMs: 0, overlap: false },
      { utterance: (u) => heard.push(u) },
    );
    for (let at = 0; at < audio.length; at += 160) listener.push(audio.subarray(at, at + 160));
    listener.close();
    assert.equal(heard.length, 1);
    const onset = voiceOnset(audio, 8000);
    const paddingMs = ((onset - heard[0]!.from) * 1000) / 8000;
    assert.ok(paddingMs >= 280, `the utterance begins ${paddingMs} ms before the voice (the padding is 300 ms)`);
  });

  describe('round trip through the realtime socket', () => {
    let f: Funded;
    before(async () => {
      f = await fundedGateway();
    });
    after(async () => {
      await f?.gw.destroy();
    });

    it('tts-local en-us-slt → /v1/realtime?intent=transcription (pcm16, server_vad, 100 ms prefix padding) → every word', async () => {
      const audio = await spoken(speech, resamplers, 24000, 0.5, 1);
      const onsetMs = (voiceOnset(audio, 24000) * 1000) / 24000;
      const c = await connect(f.gw.url, { intent: 'transcription' }, { authorization: `Bearer ${f.apiKey}` }, '/v1/realtime');
      c.send({
        type: 'transcription_session.update',
        session: {
          input_audio_format: 'pcm16',
          input_audio_transcription: { model: 'stt-local' },
          turn_detection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 100, silence_duration_ms: 500 },
        },
      });
      c.append(Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength), 48_000, 100);
      const done = await c.next('conversation.item.input_audio_transcription.completed', 30_000);
      const started = c.of('input_audio_buffer.speech_started');
      assert.equal(started.length, 1);
      assert.ok(started[0]!.audio_start_ms <= onsetMs - 80, `speech_started at ${started[0]!.audio_start_ms} ms, the voice at ${onsetMs} ms`);
      assert.equal(done.transcript, SENTENCE);
      c.ws.close();
    });
  });
});
