// OpenAI-compatible provider: chat completions, embeddings, speech-to-text (no job API) and speech.
import type { UpstreamHttp } from '../http.ts';
import type { UpstreamFiles } from '../upload.ts';
import type { Provider } from '../types.ts';
import { openaiChat } from './chat.ts';
import { openaiEmbeddings } from './embeddings.ts';
import { openaiRealtime } from './realtime.ts';
import { openaiTranscribe } from './transcribe.ts';
import { openaiSpeak } from './speak.ts';

/** Without `files` (tests of chat and embeddings), the provider has no speech-to-text. */
export function createOpenAIProvider(http: UpstreamHttp, files?: UpstreamFiles): Provider {
  const provider: Provider = { name: 'openai', chat: openaiChat(http), embeddings: openaiEmbeddings(http), speak: openaiSpeak(http) };
  if (files) {
    provider.transcribe = openaiTranscribe(files);
    provider.realtime = openaiRealtime();
  }
  return provider;
}
