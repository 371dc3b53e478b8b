// Sarvam AI provider: synchronous speech-to-text (≤ 30 s), batch jobs with diarization, realtime
// transcription, and text to speech (bulbul).
import type { UpstreamHttp } from '../http.ts';
import type { UpstreamFiles } from '../upload.ts';
import type { Provider } from '../types.ts';
import { sarvamJobs } from './jobs.ts';
import { sarvamRealtime } from './realtime.ts';
import { sarvamSpeak } from './speak.ts';
import { sarvamTranscribe } from './transcribe.ts';

export function createSarvamProvider(files: UpstreamFiles, http: UpstreamHttp): Provider {
  return { name: 'sarvam', transcribe: sarvamTranscribe(files), transcriptionJobs: sarvamJobs(files), realtime: sarvamRealtime(), speak: sarvamSpeak(http) };
}
