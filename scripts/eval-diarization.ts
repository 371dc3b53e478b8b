// npm run eval:diarization [-- --dir DIR] [-- --tune] [-- --json]
// Runs the offline diarization pipeline (src/speech/diarize.ts) on conversations assembled from real
// recorded voices (scripts/assemble-conversations.ts; DIR if given, else a fresh test set) and
// prints the diarization error rate per conversation and overall (time-weighted), with a 0.25 s
// collar (NIST RT's; DER without a collar is printed beside it), for four setups:
//   speech segments from the reference ("oracle") or from the energy detector ("energy"),
//   with the `numSpeakers` hint or without (the distance threshold decides).
// --tune sweeps the threshold on the development set (another seed: other utterances, pauses and
// orders) and prints the DER of each, never looking at the test set.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { diarize, prepareDiarization, DEFAULT_THRESHOLD, type Diarization, type SpeechSegment } from '../src/speech/diarize.ts';
import { energySegments } from '../src/speech/energy-segments.ts';
import { assembleInto, DEV_SEED, TEST_SEED, TRIOS } from './assemble-conversations.ts';
import { parseRttm, type Conversation } from './diarization/conversations.ts';
import { diarizationError, type DerScore } from './diarization/der.ts';
import { haveFfmpeg, readPcm, SAMPLE_RATE } from './diarization/sources.ts';

const COLLAR = 0.25;

interface Setup {
  name: string;
  segments: (c: Conversation) => SpeechSegment[];
  hint: boolean;
}

const SETUPS: Setup[] = [
  { name: 'oracle+hint', segments: (c) => c.reference, hint: true },
  { name: 'oracle', segments: (c) => c.reference, hint: false },
  { name: 'energy+hint', segments: (c) => energySegments(c.pcm, SAMPLE_RATE), hint: true },
  { name: 'energy', segments: (c) => energySegments(c.pcm, SAMPLE_RATE), hint: false },
];

interface Run {
  conversation: string;
  setup: string;
  speakers: number;
  found: number;
  seconds: number;
  cpu: number;
  collar: DerScore;
  noCollar: DerScore;
}

function run(c: Conversation, setup: Setup): Run {
  const segments = setup.segments(c);
  const t0 = performance.now();
  const result = diarize(c.pcm, SAMPLE_RATE, segments, setup.hint ? { numSpeakers: c.speakers.length } : {});
  return score(c, setup, result, (performance.now() - t0) / 1000);
}

function score(c: Conversation, setup: Setup, result: Diarization, cpu: number): Run {
  return {
    conversation: c.name,
    setup: setup.name,
    speakers: c.speakers.length,
    found: result.speakers,
    seconds: c.pcm.length / SAMPLE_RATE,
    cpu,
    collar: diarizationError(c.reference, result.segments, COLLAR),
    noCollar: diarizationError(c.reference, result.segments, 0),
  };
}

function readSet(dir: string): Conversation[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.rttm'))
    .sort()
    .map((f) => {
      const name = f.slice(0, -'.rttm'.length);
      const reference = parseRttm(readFileSync(join(dir, f), 'utf8'));
      return { name, speakers: [...new Set(reference.map((r) => r.speaker))], pcm: readPcm(join(dir, `${name}.wav`)), reference };
    });
}

function total(runs: readonly Run[], key: 'collar' | 'noCollar'): DerScore {
  const sum = (k: keyof DerScore) => runs.reduce((n, r) => n + r[key][k], 0);
  const speech = sum('speech');
  const errors = sum('missed') + sum('falseAlarm') + sum('confusion');
  return { speech, missed: sum('missed'), falseAlarm: sum('falseAlarm'), confusion: sum('confusion'), der: speech > 0 ? errors / speech : 0 };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

function summary(label: string, runs: readonly Run[]): Record<string, unknown> {
  const withCollar = total(runs, 'collar');
  const bare = total(runs, 'noCollar');
  const seconds = runs.reduce((n, r) => n + r.seconds, 0);
  const cpu = runs.reduce((n, r) => n + r.cpu, 0);
  const countRight = runs.filter((r) => r.found === r.speakers).length;
  return {
    label,
    conversations: runs.length,
    der: pct(withCollar.der),
    missed: pct(withCollar.missed / withCollar.speech),
    falseAlarm: pct(withCollar.falseAlarm / withCollar.speech),
    confusion: pct(withCollar.confusion / withCollar.speech),
    derNoCollar: pct(bare.der),
    speakerCountRight: `${countRight}/${runs.length}`,
    rtf: (cpu / seconds).toFixed(4),
  };
}

function evaluate(conversations: readonly Conversation[], json: boolean): void {
  const runs = conversations.flatMap((c) => SETUPS.map((s) => run(c, s)));
  if (json) {
    console.log(JSON.stringify(runs, null, 2));
    return;
  }
  console.log(`threshold ${DEFAULT_THRESHOLD}, collar ${COLLAR} s; DER per setup (speakers found / real)\n`);
  console.log(['conversation'.padEnd(30), 'sec'.padStart(5), ...SETUPS.map((s) => s.name.padStart(16))].join(' '));
  for (const c of conversations) {
    const mine = runs.filter((r) => r.conversation === c.name);
    const cells = SETUPS.map((s) => {
      const r = mine.find((m) => m.setup === s.name)!;
      return `${pct(r.collar.der)} (${r.found}/${r.speakers})`.padStart(16);
    });
    console.log([c.name.padEnd(30), (c.pcm.length / SAMPLE_RATE).toFixed(1).padStart(5), ...cells].join(' '));
  }
  console.log('\noverall (time-weighted; miss/FA/confusion as shares of scored speech):');
  const rows = SETUPS.flatMap((s) => [
    summary(
      `${s.name} all`,
      runs.filter((r) => r.setup === s.name),
    ),
    summary(
      `${s.name} 2-spk`,
      runs.filter((r) => r.setup === s.name && r.speakers === 2),
    ),
    summary(
      `${s.name} 3-spk`,
      runs.filter((r) => r.setup === s.name && r.speakers === 3),
    ),
  ]);
  console.table(rows);
}

function tune(conversations: readonly Conversation[]): void {
  const thresholds = Array.from({ length: 17 }, (_, i) => 0.5 + 0.05 * i);
  const setups = SETUPS.filter((s) => !s.hint);
  const bySetup = setups.map((setup) =>
    conversations.map((c) => {
      const prepared = prepareDiarization(c.pcm, SAMPLE_RATE, setup.segments(c));
      return thresholds.map((threshold) => score(c, setup, prepared.cut({ threshold }), 0));
    }),
  );
  for (const setup of SETUPS.filter((s) => s.hint)) {
    const runs = conversations.map((c) => run(c, setup));
    console.log(`development set, ${setup.name}: DER ${pct(total(runs, 'collar').der)}`);
  }
  console.log('development set: DER (0.25 s collar) and right speaker counts by threshold');
  thresholds.forEach((threshold, t) => {
    const cells = setups.map((setup, s) => {
      const runs = bySetup[s]!.map((perConversation) => perConversation[t]!);
      const right = runs.filter((r) => r.found === r.speakers).length;
      return `${setup.name} ${pct(total(runs, 'collar').der).padStart(6)} ${right}/${runs.length}`;
    });
    console.log(threshold.toFixed(2), ...cells);
  });
}

const { values } = parseArgs({
  options: { dir: { type: 'string' }, tune: { type: 'boolean' }, json: { type: 'boolean' } },
});
if (!haveFfmpeg()) {
  console.error('ffmpeg is missing: apt-get install -y ffmpeg');
  process.exit(1);
}
if (values.tune) {
  tune(assembleInto(mkdtempSync(join(tmpdir(), 'conversations-dev-')), DEV_SEED, TRIOS));
} else {
  const conversations = values.dir ? readSet(values.dir) : assembleInto(mkdtempSync(join(tmpdir(), 'conversations-')), TEST_SEED, TRIOS);
  evaluate(conversations, values.json ?? false);
}
