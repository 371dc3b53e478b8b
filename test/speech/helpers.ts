// Real recorded speech for the speech tests, from Debian packages that `.ci/run` installs
// (scripts/install-debian-packages.sh --test): LibriVox clips with transcripts from
// pocketsphinx-testdata, 8 kHz speech from codec2-examples. Other containers are made from them
// with ffmpeg at test time, in a temp dir, so no audio is committed.

import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export const LIBRIVOX_DIR = '/usr/share/pocketsphinx/test/data/librivox';
export const CODEC2_RAW_DIR = '/usr/share/codec2/raw';

/** The five LibriVox clips' ids, in the order of `fileids`. */
export const LIBRIVOX_IDS = ['0870', '0880', '0890', '0920', '0930'] as const;

export function librivoxWav(id: (typeof LIBRIVOX_IDS)[number]): string {
  return join(LIBRIVOX_DIR, `sense_and_sensibility_01_austen_64kb-${id}.wav`);
}

/** The reference transcripts of the LibriVox clips, by clip id (sphinx format `<s> … </s> (file)`). */
export function librivoxTranscripts(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(join(LIBRIVOX_DIR, 'transcription'), 'utf8').split('\n')) {
    const m = /^<s>\s*(.*?)\s*<\/s>\s*\(sense_and_sensibility_01_austen_64kb-(\d+)\)/.exec(line.trim());
    if (m) out.set(m[2]!, m[1]!);
  }
  return out;
}

function onPath(binary: string): boolean {
  return spawnSync(binary, ['-version'], { stdio: 'ignore' }).error === undefined;
}

/**
 * A reason to skip, or false: the tests run wherever the packages are (CI installs them), and say
 * what is missing elsewhere.
 */
export function missing(...needs: ('ffmpeg' | 'pocketsphinx' | 'librivox' | 'codec2')[]): string | false {
  for (const need of needs) {
    const ok =
      need === 'ffmpeg'
        ? onPath('ffmpeg') && onPath('ffprobe')
        : need === 'pocketsphinx'
          ? existsSync('/usr/share/pocketsphinx/model/en-us/en-us.lm.bin') && onPath('pocketsphinx_continuous')
          : need === 'librivox'
            ? existsSync(join(LIBRIVOX_DIR, 'transcription'))
            : existsSync(join(CODEC2_RAW_DIR, 'hts1a.raw'));
    if (!ok) return `${need} is not installed: run scripts/install-debian-packages.sh --test`;
  }
  return false;
}

export function tempDir(prefix = 'speech-test-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs ffmpeg on `input` with the output options given, writing `dir/name`; returns the path. */
export async function ffmpegMake(dir: string, name: string, inputArgs: string[], outputArgs: string[]): Promise<string> {
  const out = join(dir, name);
  await execFileAsync('ffmpeg', ['-v', 'error', '-y', ...inputArgs, ...outputArgs, out]);
  return out;
}

/** A file's audio as 16 kHz mono s16le, decoded by ffmpeg itself (the reference for comparisons). */
export function referencePcm(path: string, rate = 16_000): Int16Array {
  const buf = execFileSync('ffmpeg', ['-v', 'error', '-i', path, '-ac', '1', '-ar', String(rate), '-f', 's16le', 'pipe:1'], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return new Int16Array(buf.buffer, buf.byteOffset, buf.length / 2);
}

/** A codec2 example clip: 8 kHz s16le mono, headerless. */
export function codec2Pcm(name: string): Int16Array {
  const buf = readFileSync(join(CODEC2_RAW_DIR, `${name}.raw`));
  return new Int16Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
}

export function int16Of(buf: Buffer): Int16Array {
  const copy = Buffer.from(buf);
  return new Int16Array(copy.buffer, copy.byteOffset, copy.length / 2);
}

/** Signal-to-noise ratio of `test` against `ref` in dB, over their common length. */
export function snrDb(ref: ArrayLike<number>, test: ArrayLike<number>): number {
  const n = Math.min(ref.length, test.length);
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < n; i++) {
    signal += ref[i]! * ref[i]!;
    noise += (ref[i]! - test[i]!) ** 2;
  }
  return 10 * Math.log10(signal / Math.max(noise, 1e-9));
}

/** RMS of each `frame`-sample frame. */
export function envelope(samples: ArrayLike<number>, frame = 320): number[] {
  const out: number[] = [];
  for (let start = 0; start + frame <= samples.length; start += frame) {
    let sum = 0;
    for (let i = start; i < start + frame; i++) sum += samples[i]! * samples[i]!;
    out.push(Math.sqrt(sum / frame));
  }
  return out;
}

/**
 * How alike two recordings' loudness over time are: the best Pearson correlation of their 20 ms
 * (at 16 kHz) RMS envelopes over shifts of up to `maxShift` frames. Robust to the delay and phase
 * changes lossy codecs bring; near 1 for the same speech, near 0 for other audio.
 */
export function envelopeCorrelation(a: ArrayLike<number>, b: ArrayLike<number>, maxShift = 5): number {
  const ea = envelope(a);
  const eb = envelope(b);
  let best = -1;
  for (let shift = -maxShift; shift <= maxShift; shift++) {
    const xs: number[] = [];
    const ys: number[] = [];
    for (let i = 0; i < ea.length; i++) {
      const j = i + shift;
      if (j >= 0 && j < eb.length) {
        xs.push(ea[i]!);
        ys.push(eb[j]!);
      }
    }
    best = Math.max(best, pearson(xs, ys));
  }
  return best;
}

function pearson(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((s, x) => s + x, 0) / n;
  const my = ys.reduce((s, y) => s + y, 0) / n;
  let sxy = 0,
    sxx = 0,
    syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
    syy += (ys[i]! - my) ** 2;
  }
  return sxy / Math.sqrt(sxx * syy || 1);
}

/** Deterministic white noise of amplitude ±amp (a linear congruential generator). */
export function whiteNoise(n: number, amp: number, seed = 12345): Int16Array {
  const out = new Int16Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    out[i] = Math.round(((s / 0x7fffffff) * 2 - 1) * amp);
  }
  return out;
}

export { concatSamples } from '../../src/speech/pcm.ts';

/** `samples` with white noise of amplitude ±amp added throughout (clipped to 16 bits). */
export function withNoise(samples: Int16Array, amp: number): Int16Array {
  const noise = whiteNoise(samples.length, amp);
  return samples.map((x, i) => Math.max(-32768, Math.min(32767, x + noise[i]!)));
}
