// Line noise, generated: the hiss a phone line carries under the speech and in its silences, for
// the simulated callee (src/providers/simulator/voice.ts) and the tests. Deterministic (a seeded
// generator, so a test hears the same noise every run), at a given level in dBFS (RMS against full
// scale, as src/speech/vad.ts's `levelDb` reads it):
// - white: Gaussian, the same power at every frequency (a line's thermal hiss);
// - pink: Paul Kellet's filter over the white (-3 dB an octave: more rumble, with the 20 ms
//   frames' levels varying more than white's), scaled to the level over its first second.
// Phone lines carry noise around -40 dBFS (/work/shared/reference/voice.md's "Real callers").

export type NoiseColor = 'white' | 'pink';

export interface NoiseSource {
  /** The next `n` samples of the noise (16-bit PCM). */
  next(n: number): Int16Array;
}

/** mulberry32: a small seeded generator, uniform in [0, 1). */
function uniform(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Unit-variance Gaussian samples (Box–Muller). */
function gaussian(seed: number): () => number {
  const u = uniform(seed);
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const s = spare;
      spare = null;
      return s;
    }
    const r = Math.sqrt(-2 * Math.log(1 - u()));
    const a = 2 * Math.PI * u();
    spare = r * Math.sin(a);
    return r * Math.cos(a);
  };
}

/** Pink noise from white (Paul Kellet's refined filter; its gain is taken out by the calibration below). */
function pinkFilter(white: () => number): () => number {
  let b0 = 0;
  let b1 = 0;
  let b2 = 0;
  let b3 = 0;
  let b4 = 0;
  let b5 = 0;
  let b6 = 0;
  return () => {
    const w = white();
    b0 = 0.99886 * b0 + w * 0.0555179;
    b1 = 0.99332 * b1 + w * 0.0750759;
    b2 = 0.969 * b2 + w * 0.153852;
    b3 = 0.8665 * b3 + w * 0.3104856;
    b4 = 0.55 * b4 + w * 0.5329522;
    b5 = -0.7616 * b5 - w * 0.016898;
    const out = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w * 0.5362;
    b6 = w * 0.115926;
    return out;
  };
}

/** Noise at `dbfs` (RMS, e.g. -40), white or pink, the same for the same seed. */
export function lineNoise(dbfs: number, color: NoiseColor = 'white', seed = 1): NoiseSource {
  if (!Number.isFinite(dbfs) || dbfs > 0) throw new RangeError('a noise level is a number of dBFS, 0 or less');
  const rms = 32768 * 10 ** (dbfs / 20);
  const raw = color === 'pink' ? pinkFilter(gaussian(seed)) : gaussian(seed);
  let gain = rms;
  if (color === 'pink') {
    // The filter's gain, measured on its own first second (8 kHz) from a twin of the generator, so
    // that the noise heard starts at the level asked for.
    const twin = pinkFilter(gaussian(seed));
    let sum = 0;
    for (let i = 0; i < 8000; i++) sum += twin() ** 2;
    gain = rms / Math.sqrt(sum / 8000);
  }
  return {
    next(n) {
      const out = new Int16Array(n);
      for (let i = 0; i < n; i++) out[i] = Math.max(-32768, Math.min(32767, Math.round(raw() * gain)));
      return out;
    },
  };
}

/** `samples` with `noise` added (clipped to 16 bits), in place. */
export function addNoise(samples: Int16Array, noise: NoiseSource): Int16Array {
  const n = noise.next(samples.length);
  for (let i = 0; i < samples.length; i++) samples[i] = Math.max(-32768, Math.min(32767, samples[i]! + n[i]!));
  return samples;
}
