// `npm run eval:amd`: how well the gateway's own answering-machine detector (src/voice/answering-machine.ts)
// tells a person from a voicemail greeting or a call-screening prompt, and how soon (issue 41 §1:
// ≥ 90 % right, each decision within 4 s of the answer).
//
// The recordings are built here, held out from the detector's making: texts not used while its
// thresholds were set (those were Asterisk AMD()'s defaults, checked on the `--dev` texts below),
// synthesized by the gateway's own tts-local engines (src/providers/local/speak.ts) in four voices
// (espeak-ng's en-us, en-gb and en-us+f3, festival's en-us-slt), brought to 8 kHz, through μ-law
// and back (src/speech/g711.ts) as a carrier's stream carries them, clean and under line noise
// (src/speech/noise.ts: white at -45 dBFS, pink at -40). Each is what the callee's side of a call
// sounds like from the answer: a pause (0.3–1.0 s), then
// - a voicemail greeting, a beep (850, 1000 or 1400 Hz, 300–500 ms), silence;
// - a call-screening prompt, then silence (the bot waits for the caller's name; no beep);
// - a person's short answer ("hello?", "yes, speaking", "hi, who is this?"…), then silence.
// Each is fed to the detector in 20 ms frames; the decision's time is the audio's from the answer.
// For the machines, where the greeting's end was found (a message left then must follow the beep).
//
// Needs: scripts/install-debian-packages.sh (espeak-ng, festival). Usage: npm run eval:amd [-- --json] [-- --dev]
import { fileURLToPath } from 'node:url';
import { g711Decode, g711Encode } from '../src/speech/g711.ts';
import { bytesOf, concatSamples, samplesOf } from '../src/speech/pcm.ts';
import { addNoise, lineNoise } from '../src/speech/noise.ts';
import { loadResamplers, type Resamplers } from '../src/speech/resample.ts';
import { toneSamples } from '../src/speech/tone.ts';
import { loadVoiceDetectors, type VoiceDetectors } from '../src/speech/vad.ts';
import { localSpeak } from '../src/providers/local/speak.ts';
import type { ResolvedRoute } from '../src/providers/types.ts';
import { AMD_VAD, AnsweringMachineDetector, type AnsweredBy } from '../src/voice/answering-machine.ts';

const RATE = 8000;
export const VOICES = ['en-us', 'en-gb', 'en-us+f3', 'en-us-slt'];
export const CONDITIONS = ['clean', 'white -45 dBFS', 'pink -40 dBFS'] as const;
export type Kind = 'voicemail' | 'screening' | 'person';

/** The held-out texts. */
export const HELD_OUT: Record<Kind, string[]> = {
  voicemail: [
    "Hi, you've reached Priya. I can't take your call right now, please leave a message after the tone.",
    "Hello, this is Dan Miller. Sorry I missed you. Leave your name and number and I'll get back to you.",
    'The person you are trying to reach is not available. Please record your message after the tone.',
    'You have reached the voicemail of extension four two one. Please leave a message.',
    'Thanks for calling. Nobody is available to take your call. At the tone, please record your message.',
    'Leave a message.',
  ],
  screening: [
    "Hi, the person you're calling is using a screening service, and will get a copy of this conversation. Go ahead and say your name and why you're calling.",
    'This call is being screened. Please state your name and the reason for your call.',
    "If you record your name and reason for calling, I'll see if this person is available.",
  ],
  person: ['hello?', 'yes, speaking', 'hi, who is this?', 'hello, yes?', 'yeah?', 'hello, this is Ravi', 'speaking', 'hi there'],
};

/** The texts the thresholds were checked on (`--dev`): none of them is in the held-out set. */
export const DEV: Record<Kind, string[]> = {
  voicemail: ['Hello, you have reached the Sharma family. We are not home. Leave a message at the beep.', 'Please leave your message for five five five.'],
  screening: ['The number you have dialled is screening calls. Say your name, and I will connect you if they accept.'],
  person: ['hello', 'yes?', 'who is it?', 'hi, good morning'],
};

export interface Case {
  kind: Kind;
  text: string;
  voice: string;
  condition: (typeof CONDITIONS)[number];
  /** The callee's side from the answer, 8 kHz. */
  samples: Int16Array;
  /** Where its beep ends, ms (voicemail only); where its speech ends, ms. */
  beepEndMs: number | null;
  speechEndMs: number;
}

const engine = localSpeak();
const route = { id: 'tts-local#0' } as ResolvedRoute;

async function speech(text: string, voice: string, resamplers: Resamplers): Promise<Int16Array> {
  const audio = await engine.speak(route, { input: text, voice, format: 'pcm', sampleRate: 16000 }, new AbortController().signal);
  const parts: Buffer[] = [];
  for await (const c of audio.chunks) parts.push(c);
  const r = resamplers.create({ from: audio.sampleRate!, to: RATE });
  const out = Buffer.concat([bytesOf(r.process(samplesOf(Buffer.concat(parts)))), bytesOf(r.flush())]);
  r.destroy();
  return trim(samplesOf(out));
}

/** The speech from its first loud sample to its last (the engines pad it with silence). */
function trim(s: Int16Array): Int16Array {
  let [first, last] = [0, s.length - 1];
  while (first < last && Math.abs(s[first]!) < 300) first += 1;
  while (last > first && Math.abs(s[last]!) < 300) last -= 1;
  return s.slice(first, last + 1);
}

/** A small seeded choice, so every run builds the same recordings. */
function pick<T>(seed: number, from: readonly T[]): T {
  return from[Math.abs(Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) >>> 7) % from.length]!;
}

/** The recordings of `texts` in every voice and condition. */
export async function buildCases(texts: Record<Kind, string[]>, opts: { voices?: string[]; conditions?: readonly Case['condition'][] } = {}): Promise<Case[]> {
  const resamplers = await loadResamplers();
  const cases: Case[] = [];
  let seed = 1;
  for (const voice of opts.voices ?? VOICES) {
    for (const kind of ['voicemail', 'screening', 'person'] as const) {
      for (const text of texts[kind]) {
        const said = await speech(text, voice, resamplers);
        for (const condition of opts.conditions ?? CONDITIONS) {
          seed += 1;
          const lead = (RATE * pick(seed, [300, 500, 700, 1000])) / 1000;
          const parts: Int16Array[] = [new Int16Array(lead), said];
          let beepEndMs: number | null = null;
          const speechEndMs = ((lead + said.length) * 1000) / RATE;
          if (kind === 'voicemail') {
            const gap = new Int16Array((RATE * pick(seed + 1, [200, 400, 700])) / 1000);
            const beep = toneSamples(pick(seed + 2, [850, 1000, 1400]), pick(seed + 3, [300, 400, 500]));
            parts.push(gap, beep);
            beepEndMs = ((lead + said.length + gap.length + beep.length) * 1000) / RATE;
          }
          parts.push(new Int16Array(RATE * 5));
          let samples = concatSamples(parts);
          if (condition !== 'clean') addNoise(samples, condition.startsWith('white') ? lineNoise(-45, 'white', seed) : lineNoise(-40, 'pink', seed));
          samples = g711Decode('mulaw', g711Encode('mulaw', samples));
          cases.push({ kind, text, voice, condition, samples, beepEndMs, speechEndMs });
        }
      }
    }
  }
  return cases;
}

export interface Outcome {
  c: Case;
  answeredBy: AnsweredBy;
  detail: string;
  decisionMs: number;
  /** The greeting's end as found (machines), ms. */
  endMs: number | null;
  endBy: string | null;
  right: boolean;
}

/** One recording through the detector in 20 ms frames, as the media loop feeds it. */
export function detect(detectors: VoiceDetectors, c: Case, budgetMs?: number): Outcome {
  const detector = new AnsweringMachineDetector(detectors.create(AMD_VAD), budgetMs === undefined ? {} : { budgetMs });
  let decision: ReturnType<AnsweringMachineDetector['push']>['decision'];
  let ended: ReturnType<AnsweringMachineDetector['push']>['ended'];
  for (let at = 0; at < c.samples.length && !ended; at += 160) {
    const out = detector.push(c.samples.subarray(at, at + 160));
    decision ??= out.decision;
    ended ??= out.ended;
    if (decision && decision.answeredBy !== 'machine') break;
  }
  detector.close();
  const answeredBy = decision?.answeredBy ?? 'unknown';
  const expected: AnsweredBy = c.kind === 'person' ? 'human' : 'machine';
  return {
    c,
    answeredBy,
    detail: decision?.detail ?? 'none',
    decisionMs: decision?.atMs ?? Infinity,
    endMs: ended?.atMs ?? null,
    endBy: ended?.by ?? null,
    right: answeredBy === expected,
  };
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;

export function summary(outcomes: Outcome[]) {
  const share = (os: Outcome[]) => (os.length === 0 ? null : os.filter((o) => o.right).length / os.length);
  const times = outcomes.map((o) => o.decisionMs);
  const beeps = outcomes.filter((o) => o.c.beepEndMs !== null && o.answeredBy === 'machine');
  // A message left after the beep: the end found at or after the beep's end, and soon after it.
  const afterBeep = beeps.filter((o) => o.endMs !== null && o.endMs >= o.c.beepEndMs! - 40 && o.endMs <= o.c.beepEndMs! + 300).length;
  return {
    cases: outcomes.length,
    accuracy: share(outcomes),
    by_kind: Object.fromEntries((['voicemail', 'screening', 'person'] as const).map((k) => [k, share(outcomes.filter((o) => o.c.kind === k))])),
    by_condition: Object.fromEntries(CONDITIONS.map((k) => [k, share(outcomes.filter((o) => o.c.condition === k))])),
    by_voice: Object.fromEntries(VOICES.map((v) => [v, share(outcomes.filter((o) => o.c.voice === v))])),
    decision_ms: { p50: quantile(times, 0.5), p95: quantile(times, 0.95), max: Math.max(...times) },
    within_4s: outcomes.filter((o) => o.decisionMs <= 4000).length / outcomes.length,
    greeting_end_after_beep: beeps.length === 0 ? null : afterBeep / beeps.length,
    wrong: outcomes
      .filter((o) => !o.right)
      .map((o) => `${o.c.kind} "${o.c.text}" ${o.c.voice} ${o.c.condition}: ${o.answeredBy} (${o.detail}) at ${o.decisionMs} ms`),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dev = process.argv.includes('--dev');
  const started = Date.now();
  const cases = await buildCases(dev ? DEV : HELD_OUT);
  const detectors = await loadVoiceDetectors();
  const s = summary(cases.map((c) => detect(detectors, c)));
  if (process.argv.includes('--json')) console.log(JSON.stringify(s, null, 2));
  else {
    const pct = (x: number | null) => (x === null ? 'n/a' : `${(100 * x).toFixed(1)} %`);
    console.log(`answering-machine detection, ${dev ? 'dev' : 'held-out'} recordings: ${s.cases} (built in ${((Date.now() - started) / 1000).toFixed(1)} s)`);
    console.log(
      `  right: ${pct(s.accuracy)}   ${Object.entries(s.by_kind)
        .map(([k, v]) => `${k} ${pct(v)}`)
        .join('  ')}`,
    );
    console.log(
      `  by line: ${Object.entries(s.by_condition)
        .map(([k, v]) => `${k} ${pct(v)}`)
        .join('  ')}`,
    );
    console.log(
      `  by voice: ${Object.entries(s.by_voice)
        .map(([k, v]) => `${k} ${pct(v)}`)
        .join('  ')}`,
    );
    console.log(
      `  decision after the answer: p50 ${s.decision_ms.p50} ms, p95 ${s.decision_ms.p95} ms, max ${s.decision_ms.max} ms; within 4 s: ${pct(s.within_4s)}`,
    );
    console.log(`  greetings with a beep, their end found at the beep's end (0–300 ms after): ${pct(s.greeting_end_after_beep)}`);
    for (const w of s.wrong) console.log(`  wrong: ${w}`);
  }
}
