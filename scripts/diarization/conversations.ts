// Assembled conversations: real utterances of 2–3 speakers taking turns with short pauses, over a
// faint noise floor, with the reference of who spoke when (RTTM).
import { wavOf } from '../../src/speech/wav.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mulberry32, shuffle } from '../../src/intent/classifier.ts';
import { SAMPLE_RATE, type Utterance } from './sources.ts';

export interface ReferenceSegment {
  speaker: string;
  start: number;
  end: number;
}

export interface Conversation {
  name: string;
  speakers: string[];
  pcm: Int16Array;
  reference: ReferenceSegment[];
}

const EDGE_SILENCE_SECONDS = 0.5;
const MIN_PAUSE_SECONDS = 0.1;
const MAX_PAUSE_SECONDS = 0.8;
const NOISE_DBFS = -60;
const PAIR_TURNS_EACH = 4;
const TRIO_TURNS_EACH = 3;

/** Lays the turns end to end with a random pause (0.1–0.8 s) between them. */
export function assemble(name: string, turns: readonly Utterance[], rand: () => number): Conversation {
  const pauses = turns.map((_, i) => (i === 0 ? EDGE_SILENCE_SECONDS : MIN_PAUSE_SECONDS + rand() * (MAX_PAUSE_SECONDS - MIN_PAUSE_SECONDS)));
  const total = turns.reduce((n, t, i) => n + Math.round(pauses[i]! * SAMPLE_RATE) + t.pcm.length, Math.round(EDGE_SILENCE_SECONDS * SAMPLE_RATE));
  const pcm = new Int16Array(total);
  const reference: ReferenceSegment[] = [];
  let at = 0;
  turns.forEach((turn, i) => {
    at += Math.round(pauses[i]! * SAMPLE_RATE);
    pcm.set(turn.pcm, at);
    for (const s of turn.speech) reference.push({ speaker: turn.speaker, start: at / SAMPLE_RATE + s.start, end: at / SAMPLE_RATE + s.end });
    at += turn.pcm.length;
  });
  addNoise(pcm, rand);
  return { name, speakers: [...new Set(turns.map((t) => t.speaker))], pcm, reference };
}

/** White noise at NOISE_DBFS (uniform, so the pauses are not digital silence). */
function addNoise(pcm: Int16Array, rand: () => number): void {
  const amplitude = 32768 * 10 ** (NOISE_DBFS / 20) * Math.sqrt(3);
  for (let i = 0; i < pcm.length; i++) {
    pcm[i] = Math.max(-32768, Math.min(32767, Math.round(pcm[i]! + (2 * rand() - 1) * amplitude)));
  }
}

/**
 * The set: every pair of speakers with at least two utterances (A B A B…, up to 4 turns each, the
 * first speaker drawn at random), and `trios` random triples (up to 3 turns each, in random order,
 * never the same speaker twice in a row). Utterances are drawn without replacement.
 */
export function conversationSet(pool: ReadonlyMap<string, Utterance[]>, seed: number, trios: number): Conversation[] {
  const rand = mulberry32(seed);
  const ids = [...pool.keys()].sort();
  const paired = ids.filter((id) => pool.get(id)!.length >= 2);
  const out: Conversation[] = [];
  for (let i = 0; i < paired.length; i++) {
    for (let j = i + 1; j < paired.length; j++) {
      const pair = shuffle([paired[i]!, paired[j]!], rand);
      out.push(assemble(`${pair.join('+')}-s${seed}`, alternate(pair, pool, PAIR_TURNS_EACH, rand), rand));
    }
  }
  for (let k = 0; k < trios; k++) {
    const trio = shuffle([...ids], rand).slice(0, 3);
    out.push(assemble(`${trio.join('+')}-s${seed}`, interleave(trio, pool, TRIO_TURNS_EACH, rand), rand));
  }
  return out;
}

function draw(ids: readonly string[], pool: ReadonlyMap<string, Utterance[]>, each: number, rand: () => number): Map<string, Utterance[]> {
  return new Map(ids.map((id) => [id, shuffle([...pool.get(id)!], rand).slice(0, each)]));
}

/** Strict alternation, stopping when the speaker whose turn it is has nothing left. */
function alternate(pair: readonly string[], pool: ReadonlyMap<string, Utterance[]>, each: number, rand: () => number): Utterance[] {
  const left = draw(pair, pool, each, rand);
  const turns: Utterance[] = [];
  for (let i = 0; ; i++) {
    const next = left.get(pair[i % 2]!)!.shift();
    if (!next) return turns;
    turns.push(next);
  }
}

/** Random order over everyone's turns, never the same speaker twice in a row when avoidable. */
function interleave(ids: readonly string[], pool: ReadonlyMap<string, Utterance[]>, each: number, rand: () => number): Utterance[] {
  const left = draw(ids, pool, each, rand);
  const turns: Utterance[] = [];
  let previous = '';
  for (;;) {
    const candidates = ids.filter((id) => left.get(id)!.length > 0);
    if (candidates.length === 0) return turns;
    const others = candidates.filter((id) => id !== previous);
    const from = others.length > 0 ? others : candidates;
    previous = from[Math.floor(rand() * from.length)]!;
    turns.push(left.get(previous)!.shift()!);
  }
}

export function rttm(conversation: Conversation): string {
  return conversation.reference
    .map((s) => `SPEAKER ${conversation.name} 1 ${s.start.toFixed(3)} ${(s.end - s.start).toFixed(3)} <NA> <NA> ${s.speaker} <NA> <NA>`)
    .join('\n')
    .concat('\n');
}

export function parseRttm(text: string): ReferenceSegment[] {
  return text
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[0] === 'SPEAKER' && f.length >= 8)
    .map((f) => ({ speaker: f[7]!, start: Number(f[3]), end: Number(f[3]) + Number(f[4]) }));
}

/** A canonical 16-bit mono PCM WAV file (the gateway's own writer). */
export const wav = wavOf;

export function writeConversation(dir: string, conversation: Conversation): void {
  writeFileSync(join(dir, `${conversation.name}.wav`), wav(conversation.pcm, SAMPLE_RATE));
  writeFileSync(join(dir, `${conversation.name}.rttm`), rttm(conversation));
}
