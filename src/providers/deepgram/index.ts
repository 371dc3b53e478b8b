// Deepgram provider: pre-recorded speech-to-text, synchronous or with a callback.
import type { UpstreamFiles } from '../upload.ts';
import type { Provider } from '../types.ts';
import { deepgramJobs } from './jobs.ts';
import { deepgramRealtime } from './realtime.ts';
import { deepgramTranscribe } from './transcribe.ts';

export function createDeepgramProvider(files: UpstreamFiles): Provider {
  return { name: 'deepgram', transcribe: deepgramTranscribe(files), transcriptionJobs: deepgramJobs(files), realtime: deepgramRealtime() };
}
