// One utterance (16-bit PCM held in memory) as a transcription request for the sync path
// (`router.transcribe`): a small WAV, no file. Shared by the realtime socket's utterance mode
// (src/realtime/recognisers.ts) and a call's recogniser (src/voice/live.ts).
import { wavOf } from '../speech/wav.ts';
import type { RecognitionContext, TranscribeRequest } from './types.ts';

/** One utterance as a transcription request: a WAV of its samples, segment timestamps, and what it is expected to hold. */
export function utteranceRequest(samples: Int16Array, rate: number, durationS: number, language?: string, context?: RecognitionContext): TranscribeRequest {
  const wav = wavOf(samples, rate);
  const req: TranscribeRequest = {
    audio: { path: '', data: wav, filename: 'utterance.wav', contentType: 'audio/wav', bytes: wav.length, durationS },
    mode: 'transcribe',
    timestamps: ['segment'],
  };
  if (language) req.language = language;
  if (context) req.context = context;
  return req;
}
