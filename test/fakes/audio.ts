// Audio for the speech-to-text fakes and their tests: a WAV written in the test (a RIFF header
// over a sine tone; no committed binaries), and the deterministic "speech" a fake upstream hears in
// any audio: its duration (from the WAV header, else bytes at 16 kHz 16-bit mono) cut into turns
// of TURN_S seconds, speakers taking turns in order, each turn's words spread evenly over it.
import { wavOf } from '../../src/speech/wav.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AudioInput } from '../../src/providers/types.ts';

export const TURN_S = 2.5;

/** A 16-bit mono PCM WAV of a 440 Hz tone. */
export function wavBytes(seconds: number, sampleRate = 16_000): Buffer {
  const samples = new Int16Array(Math.round(seconds * sampleRate));
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / sampleRate));
  return wavOf(samples, sampleRate);
}

/** Writes a WAV of `seconds` into `dir` and describes it as the gateway would after probing it. */
export function wavInput(dir: string, seconds: number, filename = 'call recording.wav'): AudioInput {
  const bytes = wavBytes(seconds);
  const path = join(dir, `audio-${seconds}s-${Math.random().toString(36).slice(2)}.wav`);
  writeFileSync(path, bytes);
  return { path, filename, contentType: 'audio/wav', bytes: bytes.length, durationS: seconds };
}

/** Seconds of audio in a WAV (its data chunk over its byte rate), else bytes at 32000 per second. */
export function audioSeconds(audio: Buffer): number {
  if (audio.length >= 12 && audio.toString('ascii', 0, 4) === 'RIFF' && audio.toString('ascii', 8, 12) === 'WAVE') {
    let byteRate = 0;
    for (let at = 12; at + 8 <= audio.length; ) {
      const id = audio.toString('ascii', at, at + 4);
      const size = audio.readUInt32LE(at + 4);
      if (id === 'fmt ') byteRate = audio.readUInt32LE(at + 16);
      if (id === 'data' && byteRate > 0) return Math.min(size, audio.length - at - 8) / byteRate;
      at += 8 + size + (size % 2);
    }
  }
  return audio.length / 32_000;
}

export interface FakeWord {
  word: string;
  start: number;
  end: number;
}

export interface FakeTurn {
  /** 0-based: the provider renders it in its own labels. */
  speaker: number;
  start: number;
  end: number;
  text: string;
  words: FakeWord[];
}

export interface FakeSpeech {
  duration: number;
  text: string;
  turns: FakeTurn[];
}

/** What the fakes "hear": turn i is "part <i+1> of <bytes> bytes", spoken by speaker i mod speakers. */
export function fakeSpeech(audio: Buffer, speakers = 2): FakeSpeech {
  const duration = Math.round(audioSeconds(audio) * 1000) / 1000;
  const turns: FakeTurn[] = [];
  for (let i = 0; i * TURN_S < duration; i++) {
    const start = i * TURN_S;
    const end = Math.min(duration, start + TURN_S);
    const text = `part ${i + 1} of ${audio.length} bytes`;
    const list = text.split(' ');
    const step = (end - start) / list.length;
    const words = list.map((word, k) => ({ word, start: round(start + k * step), end: round(start + (k + 1) * step) }));
    turns.push({ speaker: i % Math.max(1, speakers), start, end, text, words });
  }
  return { duration, text: turns.map((t) => t.text).join(' '), turns };
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** A multipart form a fake received: its text fields (a repeated name keeps every value) and file. */
export interface ReceivedForm {
  fields: Map<string, string[]>;
  file: { name: string; type: string; bytes: Buffer } | null;
}

/** Parses a multipart body with the platform's own parser (undici's, behind Response.formData). */
export async function readForm(raw: Buffer, contentType: string | undefined): Promise<ReceivedForm | null> {
  if (!contentType?.startsWith('multipart/form-data')) return null;
  let form: FormData;
  try {
    form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
  } catch {
    return null;
  }
  const fields = new Map<string, string[]>();
  let file: ReceivedForm['file'] = null;
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') fields.set(name, [...(fields.get(name) ?? []), value]);
    else if (name === 'file') file = { name: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
  }
  return { fields, file };
}
