// Speech as a call's recogniser hears it, for the evaluations and tests of the offline engines
// (scripts/eval-voices.ts, scripts/eval-understanding.ts, test/speech/language-models.test.ts):
// a sentence `tts-local` spoke (`speakWhole`, src/providers/local/speak.ts) goes down to 8 kHz, through μ-law and back up to the
// engine's 16 kHz, as a callee's voice reaches the gateway from a carrier (src/providers/local/
// transcribe.ts brings a call's 8 kHz utterance up the same way).
import { g711Decode, g711Encode } from './g711.ts';
import { bytesOf, samplesOf } from './pcm.ts';
import type { Resamplers } from './resample.ts';

/** `pcm` at `from` Hz resampled to `to` Hz (SpeexDSP, quality 5), whole. */
export function resampleWhole(resamplers: Resamplers, pcm: Int16Array, from: number, to: number): Int16Array {
  if (from === to) return pcm;
  const r = resamplers.create({ from, to, quality: 5 });
  try {
    return samplesOf(Buffer.concat([bytesOf(r.process(pcm)), bytesOf(r.flush())]));
  } finally {
    r.destroy();
  }
}

/** `pcm` at `rate` Hz through a telephone line: 8 kHz μ-law, brought back to 16 kHz. */
export function overTelephone(resamplers: Resamplers, pcm: Int16Array, rate: number): Int16Array {
  const line = g711Decode('mulaw', g711Encode('mulaw', resampleWhole(resamplers, pcm, rate, 8000)));
  return resampleWhole(resamplers, line, 8000, 16000);
}
