// Sarvam AI provider: synchronous speech-to-text (≤ 30 s) and batch jobs with diarization.
import type { UpstreamFiles } from '../upload.ts';
import type { Provider } from '../types.ts';
import { sarvamJobs } from './jobs.ts';
import { sarvamRealtime } from './realtime.ts';
import { sarvamTranscribe } from './transcribe.ts';

export function createSarvamProvider(files: UpstreamFiles): Provider {
  return { name: 'sarvam', transcribe: sarvamTranscribe(files), transcriptionJobs: sarvamJobs(files), realtime: sarvamRealtime() };
}
