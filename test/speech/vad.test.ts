import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { g711Decode, g711Encode } from '../../src/speech/g711.ts';
import { lineNoise, type NoiseColor } from '../../src/speech/noise.ts';
import { fvadMode, gateMarginDb, loadVoiceDetectors, VadError, type ServerVadOptions, type VadEvent, type VoiceDetectors } from '../../src/speech/vad.ts';
import { codec2Pcm, concatSamples, librivoxWav, missing, referencePcm, whiteNoise, withNoise } from './helpers.ts';

/** Speech spans as [start, end] seconds from the events, with the silence hangover taken off the ends. */
function spans(events: VadEvent[], options: { prefix: number; silence: number }): [number, number][] {
  const out: [number, number][] = [];
  for (const e of events) {
    if (e.type === 'speech_started') out.push([(e.audio_start_ms + options.prefix) / 1000, NaN]);
    else out.at(-1)![1] = (e.audio_end_ms - options.silence) / 1000;
  }
  return out;
}

function detect(detectors: VoiceDetectors, audio: Int16Array, options: ServerVadOptions, chunk = audio.length): VadEvent[] {
  const d = detectors.create(options);
  const events: VadEvent[] = [];
  for (let at = 0; at < audio.length; at += chunk) events.push(...d.push(audio.subarray(at, at + chunk)));
  events.push(...d.flush());
  d.destroy();
  return events;
}

function assertSpans(actual: [number, number][], expected: [number, number][], tolerance = 0.3): void {
  assert.equal(actual.length, expected.length, `spans ${JSON.stringify(actual)}`);
  actual.forEach(([s, e], i) => {
    const [xs, xe] = expected[i]!;
    assert.ok(Math.abs(s - xs) <= tolerance && Math.abs(e - xe) <= tolerance, `span ${i}: ${s}–${e}, expected ${xs}–${xe} ±${tolerance}`);
  });
}

describe('voice activity detection', { skip: missing('ffmpeg', 'librivox', 'codec2') }, () => {
  let detectors: VoiceDetectors;
  before(async () => {
    detectors = await loadVoiceDetectors();
  });

  // 1 s silence + LibriVox 0880 + 1 s + 0930 + 1 s. Where the words are (pocketsphinx's word times
  // on this audio): 1.21–3.80 s and 5.20–8.03 s.
  const speechAt: [number, number][] = [
    [1.21, 3.8],
    [5.2, 8.03],
  ];
  const clips = (rate: number): Int16Array => {
    const gap = new Int16Array(rate);
    return concatSamples([gap, referencePcm(librivoxWav('0880'), rate), gap, referencePcm(librivoxWav('0930'), rate), gap]);
  };

  for (const rate of [16000, 8000] as const) {
    it(`${rate / 1000} kHz: finds both utterances within ±300 ms, in silence and in steady noise, in 20 ms pushes`, () => {
      const opts = { sampleRate: rate, prefix_padding_ms: 0, silence_duration_ms: 300 };
      const audio = clips(rate);
      assertSpans(spans(detect(detectors, audio, opts, rate / 50), { prefix: 0, silence: 0.3 * 1000 }), speechAt);
      // White noise at ±300 (-45 dBFS), all through, as on a phone line.
      assertSpans(spans(detect(detectors, withNoise(audio, 300), opts, 777), { prefix: 0, silence: 300 }), speechAt);
    });
  }

  it('telephony: 8 kHz speech through μ-law, codec2 clips hts1a + cross', () => {
    const gap = new Int16Array(8000);
    const audio = concatSamples([gap, codec2Pcm('hts1a'), gap, codec2Pcm('cross'), gap]);
    const phone = g711Decode('mulaw', g711Encode('mulaw', withNoise(audio, 100)));
    // Where the clips are loud (their 100 ms levels): hts1a 0.2–2.5 s, cross 0.3–2.2 s, placed at 1 s and 5 s.
    assertSpans(spans(detect(detectors, phone, { sampleRate: 8000, prefix_padding_ms: 0, silence_duration_ms: 300 }), { prefix: 0, silence: 300 }), [
      [1.2, 3.5],
      [5.3, 7.2],
    ]);
  });

  // Issue 39: phone lines carry about -40 dBFS of noise. Steady, it was never speech; rising (from a
  // -55 dBFS hiss, here 1 s before the speech or with it), it was speech for 3 s: the utterance
  // ended 0.7-1.1 s late, and noise alone was a speech of 3.7 s.
  it('line noise at -40 dBFS, steady or rising, on 20 ms μ-law and 100 ms PCM16 pushes: utterances end where they do on a clean line; noise alone is no speech', () => {
    const options = { sampleRate: 8000 as const, prefix_padding_ms: 300, silence_duration_ms: 700 };
    const line = (audio: Int16Array, color: NoiseColor | null, fromMs: number): Int16Array => {
      if (!color) return audio;
      const [loud, hiss] = [lineNoise(-40, color, 3).next(audio.length), lineNoise(-55, color, 4).next(audio.length)];
      return audio.map((x, i) => Math.max(-32768, Math.min(32767, x + (i >= fromMs * 8 ? loud[i]! : hiss[i]!))));
    };
    const mulaw = (audio: Int16Array) => g711Decode('mulaw', g711Encode('mulaw', audio));
    for (const clip of ['hts1a', 'cross']) {
      const audio = concatSamples([new Int16Array(16000), codec2Pcm(clip), new Int16Array(24000)]); // the speech from 2 s
      const clean = detect(detectors, mulaw(audio), options, 160);
      const cleanEnd = clean[1]?.type === 'speech_stopped' ? clean[1].audio_end_ms : NaN;
      for (const [color, fromMs] of [
        ['white', 0],
        ['pink', 0],
        ['white', 1000],
        ['pink', 2000],
      ] as const) {
        for (const [pushed, chunk] of [
          [mulaw(line(audio, color, fromMs)), 160],
          [line(audio, color, fromMs), 800],
        ] as const) {
          const events = detect(detectors, pushed, options, chunk);
          const what = `${clip}, ${color} noise from ${fromMs} ms, ${chunk} samples a push: ${JSON.stringify(events)}`;
          assert.deepEqual(
            events.map((e) => e.type),
            ['speech_started', 'speech_stopped'],
            what,
          );
          const end = events[1]!.type === 'speech_stopped' ? events[1]!.audio_end_ms : NaN;
          assert.ok(end - cleanEnd <= 100, `ends ${end - cleanEnd} ms after the clean line's: ${what}`);
        }
      }
    }
    for (const color of ['white', 'pink'] as const) {
      const noise = mulaw(line(new Int16Array(8000 * 8), color, 2000));
      const d = detectors.create(options);
      let voiced = 0;
      const events: VadEvent[] = [];
      for (let at = 0; at < noise.length; at += 160) {
        events.push(...d.push(noise.subarray(at, at + 160)));
        voiced = Math.max(voiced, d.voicedMs);
      }
      d.destroy();
      assert.deepEqual([events, voiced], [[], 0], `${color} noise rising from -55 to -40 dBFS`);
    }
  });

  it("OpenAI's semantics: audio_start_ms includes the prefix padding, audio_end_ms the silence; defaults 300 and 500", () => {
    const events = detect(detectors, clips(16000), { sampleRate: 16000 });
    assert.equal(events.length, 4);
    assert.deepEqual(
      events.map((e) => e.type),
      ['speech_started', 'speech_stopped', 'speech_started', 'speech_stopped'],
    );
    const [s1, e1] = [events[0]!, events[1]!];
    assert.ok(s1.type === 'speech_started' && Math.abs(s1.audio_start_ms - (1210 - 300)) <= 300, JSON.stringify(s1));
    assert.ok(e1.type === 'speech_stopped' && Math.abs(e1.audio_end_ms - (3800 + 500)) <= 300, JSON.stringify(e1));
    const padded = detect(detectors, clips(16000), { sampleRate: 16000, prefix_padding_ms: 5000 });
    assert.ok(padded[0]?.type === 'speech_started' && padded[0].audio_start_ms === 0, 'never before the audio began');
    assert.ok(padded[0].onset_ms > 0 && Math.abs(padded[0].onset_ms - s1.onset_ms) <= 40, `the onset is the first voiced frame: ${JSON.stringify(padded[0])}`);
  });

  it('hears nothing in noise alone, and closes an utterance still open at the end', () => {
    assert.deepEqual(detect(detectors, whiteNoise(16000 * 4, 1000), { sampleRate: 16000 }), []);
    const speech = referencePcm(librivoxWav('0880'));
    const events = detect(detectors, speech.subarray(0, 16000 * 2), { sampleRate: 16000 });
    assert.deepEqual(
      events.map((e) => e.type),
      ['speech_started', 'speech_stopped'],
    );
    const stopped = events[1]!;
    assert.ok(stopped.type === 'speech_stopped' && stopped.audio_end_ms === 2000, JSON.stringify(stopped));
    assert.ok(stopped.voiced_end_ms <= 2000 && stopped.voiced_end_ms > 1500, `the end of the last voiced frame: ${JSON.stringify(stopped)}`);
  });

  it('maps the threshold to a WebRTC mode and a gate margin, and refuses bad settings', () => {
    assert.deepEqual([0, 0.24, 0.25, 0.5, 0.74, 0.75, 1].map(fvadMode), [0, 0, 1, 2, 2, 3, 3]);
    assert.equal(gateMarginDb(0.5), 6);
    assert.throws(() => fvadMode(1.5), VadError);
    assert.throws(() => detectors.create({ sampleRate: 44100 as 16000 }), /8000 or 16000/);
    assert.throws(() => detectors.create({ sampleRate: 16000, frame_ms: 25 as 20 }), /10, 20 or 30/);
    assert.throws(() => detectors.create({ sampleRate: 16000, silence_duration_ms: -1 }), /silence_duration_ms/);
  });
});
