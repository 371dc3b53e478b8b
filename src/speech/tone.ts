// A pure tone, 8 kHz 16-bit PCM: a voicemail's beep (the simulator's `beep_ms` callees, the
// answering-machine eval's recordings and tests).
import { SpeechClip } from './clip.ts';
import { bytesOf } from './pcm.ts';

/** `ms` of a `hz` sine at `amplitude` (default 9000: about -11 dBFS), 8 kHz. */
export function toneSamples(hz: number, ms: number, amplitude = 9000): Int16Array {
  return Int16Array.from({ length: Math.round(ms * 8) }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / 8000)));
}

/** The same tone as a clip (what the simulator's callee sends). */
export function toneClip(hz: number, ms: number): SpeechClip {
  return new SpeechClip(bytesOf(toneSamples(hz, ms)));
}
