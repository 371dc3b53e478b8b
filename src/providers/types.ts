// The provider boundary (Portkey style): one folder per provider under src/providers/<name>/, one
// file per capability (chat.ts, embeddings.ts), and an index.ts registry keyed by provider name.
// Requests and responses here are OpenAI-shaped whatever the upstream speaks; a provider translates.
//
// This file names what a provider is: its name and the capabilities it serves. Each capability's
// port types live in capabilities/<capability>.ts (a folder of ports, not a provider), what every
// call shares (the route, a refusal, UpstreamError) in upstream.ts; all are re-exported here, so a
// caller imports the boundary from one place.
import type { ChatCapability } from './capabilities/chat.ts';
import type { EmbeddingsCapability } from './capabilities/embeddings.ts';
import type { RealtimeCapability } from './capabilities/realtime.ts';
import type { SpeakCapability } from './capabilities/speech.ts';
import type { TranscribeCapability, TranscriptionJobCapability } from './capabilities/transcription.ts';

export * from './upstream.ts';
export * from './capabilities/chat.ts';
export * from './capabilities/embeddings.ts';
export * from './capabilities/transcription.ts';
export * from './capabilities/realtime.ts';
export * from './capabilities/speech.ts';

export interface Provider {
  name: string;
  realtime?: RealtimeCapability;
  speak?: SpeakCapability;
  chat?: ChatCapability;
  embeddings?: EmbeddingsCapability;
  transcribe?: TranscribeCapability;
  transcriptionJobs?: TranscriptionJobCapability;
}
