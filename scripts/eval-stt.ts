// `npm run eval:stt`: word error rate and speed of the offline recogniser (`stt-local`:
// pocketsphinx, Debian's US English model) on the five LibriVox clips of Debian's
// pocketsphinx-testdata, whose transcripts ship beside them.
//
// Two paths, each through the gateway's own building blocks:
// - plain: ffmpeg decodes the 16 kHz WAV → the recogniser;
// - telephone: ffmpeg decodes to 8 kHz → μ-law encode and decode (g711.ts) → 8→16 kHz
//   (resample.ts) → the recogniser, as a phone call's audio would arrive.
// Real-time factor = wall time from starting the recogniser (process start and model load
// included, as a sync request pays them) to the transcript, over the audio's duration; and the
// wait after the last audio is written (what a client waits once it has sent everything).
//
// Each path also runs with a `prompt` naming the clip's rare words (PROMPTS: what a client who knows
// the recording would name), which the engine's N best are rescored by (src/speech/nbest.ts).
//
// Needs: scripts/install-debian-packages.sh --test. Usage: npm run eval:stt [-- --json]

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { decodeToPcm, PCM_BYTES_PER_SECOND } from '../src/speech/ffmpeg.ts';
import { g711Decode, g711Encode } from '../src/speech/g711.ts';
import { bytesOf, samplesOf } from '../src/speech/pcm.ts';
import { startPocketsphinx } from '../src/speech/pocketsphinx.ts';
import { loadResamplers, type Resamplers } from '../src/speech/resample.ts';
import { biasOf } from '../src/speech/nbest.ts';
import { loadVoiceDetectors, type VoiceDetectors } from '../src/speech/vad.ts';
import { wordErrors, type WordErrors } from '../src/speech/wer.ts';

const LIBRIVOX = '/usr/share/pocketsphinx/test/data/librivox';

/** A prompt per clip naming its rare words (names, literary words), as a client would give it. */
const PROMPTS: Record<string, string> = {
  '0870': 'John Dashwood, leisure, prudently',
  '0880': 'ill disposed',
  '0890': 'cold hearted, selfish, ill disposed',
  '0920': 'amiable, respectable',
  '0930': 'amiable',
};

interface ClipResult {
  id: string;
  seconds: number;
  reference: string;
  hypothesis: string;
  errors: WordErrors;
  wallSeconds: number;
  tailSeconds: number;
}

function references(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(join(LIBRIVOX, 'transcription'), 'utf8').split('\n')) {
    const m = /^<s>\s*(.*?)\s*<\/s>\s*\((\S+)\)/.exec(line.trim());
    if (m) out.set(m[2]!, m[1]!);
  }
  return out;
}

async function collect(source: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of source) parts.push(chunk);
  return Buffer.concat(parts);
}

/** The clip as a phone line carries it: 8 kHz μ-law, back to 16 kHz linear for the recogniser. */
async function telephone(path: string, resamplers: Resamplers): Promise<Buffer> {
  const pcm8k = await collect(decodeToPcm({ path }, { sampleRate: 8000 }));
  const line = g711Decode('mulaw', g711Encode('mulaw', samplesOf(pcm8k)));
  const up = resamplers.create({ from: 8000, to: 16000 });
  const out = Buffer.concat([bytesOf(up.process(line)), bytesOf(up.flush())]);
  up.destroy();
  return out;
}

/** Feeds the PCM in 100 ms chunks, as a stream would; times the whole run and the wait after the last chunk. */
async function recognise(pcm: Buffer, detectors: VoiceDetectors, prompt?: string): Promise<{ text: string; wall: number; tail: number }> {
  const started = performance.now();
  const recogniser = await startPocketsphinx({ detectors, bias: prompt ? biasOf({ prompt }) : null });
  for (let at = 0; at < pcm.length; at += 3200) await recogniser.write(pcm.subarray(at, at + 3200));
  const ending = performance.now();
  const transcript = await recogniser.end();
  const done = performance.now();
  return { text: transcript.text, wall: (done - started) / 1000, tail: (done - ending) / 1000 };
}

function summary(name: string, results: ClipResult[]) {
  const sum = (f: (r: ClipResult) => number): number => results.reduce((s, r) => s + f(r), 0);
  const words = sum((r) => r.errors.words);
  const errors = sum((r) => r.errors.substitutions + r.errors.deletions + r.errors.insertions);
  const audio = sum((r) => r.seconds);
  return {
    path: name,
    clips: results.length,
    words,
    audio_seconds: Number(audio.toFixed(2)),
    wer: Number((errors / words).toFixed(4)),
    substitutions: sum((r) => r.errors.substitutions),
    deletions: sum((r) => r.errors.deletions),
    insertions: sum((r) => r.errors.insertions),
    rtf: Number((sum((r) => r.wallSeconds) / audio).toFixed(3)),
    tail_seconds_mean: Number((sum((r) => r.tailSeconds) / results.length).toFixed(3)),
  };
}

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const refs = references();
  const ids = readFileSync(join(LIBRIVOX, 'fileids'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const resamplers = await loadResamplers();
  const detectors = await loadVoiceDetectors();
  const kinds = ['plain', 'telephone', 'plain_prompt', 'telephone_prompt'] as const;
  const paths: Record<(typeof kinds)[number], ClipResult[]> = { plain: [], telephone: [], plain_prompt: [], telephone_prompt: [] };
  for (const id of ids) {
    const path = join(LIBRIVOX, `${id}.wav`);
    const inputs = { plain: await collect(decodeToPcm({ path })), telephone: await telephone(path, resamplers) };
    for (const kind of kinds) {
      const pcm = inputs[kind.startsWith('plain') ? 'plain' : 'telephone'];
      const run = await recognise(pcm, detectors, kind.endsWith('_prompt') ? PROMPTS[id.slice(-4)] : undefined);
      const reference = refs.get(id) ?? '';
      const result = {
        id,
        seconds: pcm.length / PCM_BYTES_PER_SECOND,
        reference,
        hypothesis: run.text,
        errors: wordErrors(reference, run.text),
        wallSeconds: run.wall,
        tailSeconds: run.tail,
      };
      paths[kind].push(result);
      if (!json) console.log(`${kind.padEnd(16)} ${id.slice(-4)} ${result.seconds.toFixed(2)} s  ref: ${reference}\n${' '.repeat(24)}hyp: ${run.text}`);
    }
  }
  const out = {
    plain: summary('plain 16 kHz', paths.plain),
    telephone: summary('8 kHz μ-law → 16 kHz', paths.telephone),
    plain_prompt: summary('plain 16 kHz, prompt', paths.plain_prompt),
    telephone_prompt: summary('8 kHz μ-law → 16 kHz, prompt', paths.telephone_prompt),
  };
  if (json) {
    console.log(JSON.stringify({ ...out, clips: paths }, null, 2));
  } else {
    console.log();
    console.table(Object.values(out));
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
