// `npm run eval:voices`: how well the offline recogniser (`stt-local`: pocketsphinx, Debian's US
// English model) hears each English voice of `tts-local`, and how fast each voice starts speaking.
// The listen-proxy for "which voice sounds more like a person": a recogniser trained on people's
// speech hears a more natural voice better. Indian languages have no offline recogniser here, so
// their voices cannot be measured this way (docs/speech-engines.md says how they were chosen).
//
// For each voice, ten sentences a caller might say (none taken from the demo pack's examples) are
// synthesized by the gateway's own engine (src/providers/local/speak.ts), then recognised on two
// paths, through the gateway's building blocks as in `npm run eval:stt`:
// - wideband: the voice's PCM resampled to 16 kHz → the recogniser;
// - telephone: resampled to 8 kHz → μ-law encode and decode (g711.ts) → 8→16 kHz → the recogniser,
//   as a call's callee is heard.
// Timing: first audio byte (the call to the engine until its first PCM chunk; process start
// included, as every request pays it; median of 5) for one sentence without a comma and for
// `bench:speech`'s 97 characters with two (festival speaks clause by clause), and the real-time
// factor (synthesis wall time over audio seconds) of all ten sentences in one text.
//
// --realtime: also the realtime socket's path (issue 40, item 4): each sentence with 0.5 s of
// silence before and 1 s after, sent as a client would, in 100 ms chunks of 24 kHz pcm16 and of
// 8 kHz μ-law, through the session's own audio path (src/realtime/session.ts's: the 24→16 kHz input
// resampler, the listening stage with server_vad's defaults, the streaming stt-local recogniser on
// one engine), the WER of what its utterances were heard as beside the whole-file paths above
// (the same audio through the gateway's WebSocket gave the same words: test/speech/listening.test.ts
// runs one sentence so).
//
// Needs: scripts/install-debian-packages.sh. Usage: npm run eval:voices [-- --json] [-- --realtime]
import { performance } from 'node:perf_hooks';
import { g711Decode, g711Encode } from '../src/speech/g711.ts';
import { bytesOf, samplesOf } from '../src/speech/pcm.ts';
import { startPocketsphinx } from '../src/speech/pocketsphinx.ts';
import { loadResamplers, type Resamplers } from '../src/speech/resample.ts';
import { loadVoiceDetectors, type VoiceDetectors } from '../src/speech/vad.ts';
import { Listener } from '../src/speech/listening.ts';
import { startPocketsphinxEngine } from '../src/speech/pocketsphinx-engine.ts';
import { streamingLocalRecogniser } from '../src/realtime/recognisers.ts';
import { DEFAULT_TURN_DETECTION, detectionOf } from '../src/realtime/settings.ts';
import { wordErrors } from '../src/speech/wer.ts';
import { localSpeak } from '../src/providers/local/speak.ts';
import type { ResolvedRoute } from '../src/providers/types.ts';

const VOICES = ['en-us', 'en-gb', 'en-us-slt'];
const SENTENCES = [
  'my internet is not working since this morning',
  'the money was debited but the ATM gave no cash',
  'I want to raise a dispute for two thousand rupees',
  'please send me the statement for last month',
  'no thank you that is all',
  'yes please go ahead',
  'my card was blocked after I entered the wrong pin',
  'I paid the bill yesterday but the connection is still cut',
  'can you tell me my account balance',
  'the call keeps dropping when I travel to work',
];
/** bench/speech.ts's sentence: its first clause is two words. */
const WITH_COMMAS = 'Hello, your account balance is two hundred rupees, and your next bill is due on the fifth of May.';
const engine = localSpeak();
const route = { id: 'tts-local#0' } as ResolvedRoute;

/** The voice's PCM at its own rate, and when its first chunk came (ms after the call). */
async function synthesize(voice: string, input: string): Promise<{ pcm: Buffer; rate: number; firstMs: number; totalMs: number }> {
  const started = performance.now();
  const audio = await engine.speak(route, { input, voice, format: 'pcm', sampleRate: 16000 }, new AbortController().signal);
  const parts: Buffer[] = [];
  let firstMs = -1;
  for await (const c of audio.chunks) {
    if (firstMs < 0 && c.length > 0) firstMs = performance.now() - started;
    parts.push(c);
  }
  return { pcm: Buffer.concat(parts), rate: audio.sampleRate!, firstMs, totalMs: performance.now() - started };
}

function resample(resamplers: Resamplers, pcm: Buffer, from: number, to: number): Int16Array {
  const r = resamplers.create({ from, to });
  const out = Buffer.concat([bytesOf(r.process(samplesOf(pcm))), bytesOf(r.flush())]);
  r.destroy();
  return samplesOf(out);
}

async function recognise(pcm: Int16Array, detectors: VoiceDetectors): Promise<string> {
  const recogniser = await startPocketsphinx({ detectors });
  const bytes = bytesOf(pcm);
  for (let at = 0; at < bytes.length; at += 3200) await recogniser.write(bytes.subarray(at, at + 3200));
  return (await recogniser.end()).text;
}

/**
 * The realtime socket's path: `pcm` (the voice at `rate`) as a client sends it (`input`: 24 kHz pcm16
 * or 8 kHz μ-law, 100 ms chunks), decoded, brought to the session's working rate, listened to and
 * recognised utterance by utterance as src/realtime/session.ts does; the utterances' text.
 */
async function socketRoundTrip(pcm: Buffer, rate: number, input: 'pcm16' | 'mulaw', resamplers: Resamplers, detectors: VoiceDetectors): Promise<string> {
  const inRate = input === 'pcm16' ? 24000 : 8000;
  const work = input === 'pcm16' ? 16000 : 8000;
  const speech = resample(resamplers, pcm, rate, inRate);
  let audio: Int16Array = new Int16Array(speech.length + Math.round(1.5 * inRate));
  audio.set(speech, Math.round(0.5 * inRate));
  if (input === 'mulaw') audio = g711Decode('mulaw', g711Encode('mulaw', audio));
  const inputResampler = inRate === work ? null : resamplers.create({ from: inRate, to: work, quality: 5 });
  const recogniser = streamingLocalRecogniser({ rate: work, startEngine: () => startPocketsphinxEngine({}), resamplers });
  const texts: Promise<{ text: string }>[] = [];
  const listener = new Listener(
    { rate: work, detectors, detection: detectionOf(DEFAULT_TURN_DETECTION), maxUtteranceMs: 15_000, bufferMs: 20_000, keepExtraMs: 500, overlap: true },
    {
      utterance: (u) => {
        const ms = (n: number) => Math.round((n * 1000) / work);
        texts.push(recogniser.recognise({ itemId: 'eval', startMs: ms(u.from), endMs: ms(u.to), samples: () => u.samples }, new AbortController().signal));
      },
    },
  );
  const step = inRate / 10;
  for (let at = 0; at < audio.length; at += step) {
    const chunk = audio.subarray(at, at + step);
    const samples = inputResampler ? inputResampler.process(chunk) : chunk;
    recogniser.audio(samples);
    listener.push(samples);
  }
  listener.flush();
  const heard = (await Promise.all(texts)).map((t) => t.text).join(' ');
  recogniser.close();
  listener.close();
  inputResampler?.destroy();
  return heard;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const realtime = process.argv.includes('--realtime');
  const resamplers = await loadResamplers();
  const detectors = await loadVoiceDetectors();
  const rows = [];
  const heard: Record<string, { reference: string; wideband: string; telephone: string; socket_pcm16?: string; socket_mulaw?: string }[]> = {};
  for (const voice of VOICES) {
    const plain: number[] = [];
    const commas: number[] = [];
    for (let i = 0; i < 5; i++) {
      plain.push((await synthesize(voice, `${SENTENCES[1]}.`)).firstMs);
      commas.push((await synthesize(voice, WITH_COMMAS)).firstMs);
    }
    const all = await synthesize(voice, `${SENTENCES.join('. ')}.`);
    const totals = {
      wideband: { errors: 0, words: 0 },
      telephone: { errors: 0, words: 0 },
      socketPcm16: { errors: 0, words: 0 },
      socketMulaw: { errors: 0, words: 0 },
    };
    heard[voice] = [];
    for (const reference of SENTENCES) {
      const { pcm, rate } = await synthesize(voice, reference);
      const wide = await recognise(resample(resamplers, pcm, rate, 16000), detectors);
      const line = g711Decode('mulaw', g711Encode('mulaw', resample(resamplers, pcm, rate, 8000)));
      const phone = await recognise(resample(resamplers, Buffer.from(bytesOf(line)), 8000, 16000), detectors);
      const socket = realtime
        ? { pcm16: await socketRoundTrip(pcm, rate, 'pcm16', resamplers, detectors), mulaw: await socketRoundTrip(pcm, rate, 'mulaw', resamplers, detectors) }
        : null;
      for (const [path, hypothesis] of [
        ['wideband', wide],
        ['telephone', phone],
        ...(socket
          ? ([
              ['socketPcm16', socket.pcm16],
              ['socketMulaw', socket.mulaw],
            ] as const)
          : []),
      ] as const) {
        const e = wordErrors(reference, hypothesis);
        totals[path].errors += e.substitutions + e.deletions + e.insertions;
        totals[path].words += e.words;
      }
      heard[voice].push({ reference, wideband: wide, telephone: phone, ...(socket ? { socket_pcm16: socket.pcm16, socket_mulaw: socket.mulaw } : {}) });
      if (!json) console.log(`${voice.padEnd(10)} ref:   ${reference}\n${' '.repeat(11)}16k:   ${wide}\n${' '.repeat(11)}μ-law: ${phone}`);
      if (!json && socket) console.log(`${' '.repeat(11)}socket pcm16: ${socket.pcm16}\n${' '.repeat(11)}socket μ-law: ${socket.mulaw}`);
    }
    rows.push({
      voice,
      wer_16k: Number((totals.wideband.errors / totals.wideband.words).toFixed(3)),
      wer_mulaw: Number((totals.telephone.errors / totals.telephone.words).toFixed(3)),
      ...(realtime
        ? {
            wer_socket_pcm16: Number((totals.socketPcm16.errors / totals.socketPcm16.words).toFixed(3)),
            wer_socket_mulaw: Number((totals.socketMulaw.errors / totals.socketMulaw.words).toFixed(3)),
          }
        : {}),
      first_byte_ms_no_comma: Math.round(median(plain)),
      first_byte_ms_commas: Math.round(median(commas)),
      rtf: Number((all.totalMs / 1000 / (all.pcm.length / 2 / all.rate)).toFixed(3)),
    });
  }
  if (json) console.log(JSON.stringify({ voices: rows, heard }, null, 2));
  else console.table(rows);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
