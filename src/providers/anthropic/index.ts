// Anthropic provider: chat through the Messages API.
import type { UpstreamHttp } from '../http.ts';
import type { Provider } from '../types.ts';
import { anthropicChat, type AnthropicOptions } from './chat.ts';

export function createAnthropicProvider(http: UpstreamHttp, opts: AnthropicOptions = {}): Provider {
  return { name: 'anthropic', chat: anthropicChat(http, opts) };
}
