// A pure tone, 8 kHz 16-bit PCM: a voicemail's beep (the simulator's `beep_ms` callees, the
// answering-machine eval's recordings and tests); and the Goertzel filter that finds one.
import { SpeechClip } from './clip.ts';
import { bytesOf } from './pcm.ts';

/** `ms` of a `hz` sine at `amplitude` (default 9000: about -11 dBFS), 8 kHz. */
export function toneSamples(hz: number, ms: number, amplitude = 9000): Int16Array {
  return Int16Array.from({ length: Math.round(ms * 8) }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / 8000)));
}

/** The Goertzel filter's coefficient for `hz` at `rate`. */
export function goertzelCoeff(hz: number, rate: number): number {
  return 2 * Math.cos((2 * Math.PI * hz) / rate);
}

/**
 * The power of one frequency in `samples` (the Goertzel algorithm, `coeff` from goertzelCoeff): a
 * sine of amplitude A over N samples gives about (A·N/2)². The beep detector (src/voice/answering-machine.ts)
 * and the fake carriers' DTMF detector use it.
 */
export function goertzelPower(samples: ArrayLike<number>, coeff: number): number {
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i]! + coeff * s1 - s2;
    s2 = s1;
    s1 = s;
  }
  return s1 * s1 + s2 * s2 - coeff * s1 * s2;
}

/** The same tone as a clip (what the simulator's callee sends). */
export function toneClip(hz: number, ms: number): SpeechClip {
  return new SpeechClip(bytesOf(toneSamples(hz, ms)));
}
