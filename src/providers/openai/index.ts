// OpenAI-compatible provider: chat completions and embeddings.
import type { UpstreamHttp } from '../http.ts';
import type { Provider } from '../types.ts';
import { openaiChat } from './chat.ts';
import { openaiEmbeddings } from './embeddings.ts';

export function createOpenAIProvider(http: UpstreamHttp): Provider {
  return { name: 'openai', chat: openaiChat(http), embeddings: openaiEmbeddings(http) };
}
