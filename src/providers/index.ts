// The provider registry, keyed by the closed set of provider names a route's `provider` may take.
// A new provider is one folder (src/providers/<name>/, a file per capability) plus one line here.
import type { UpstreamHttp } from './http.ts';
import type { Provider } from './types.ts';
import { createOpenAIProvider } from './openai/index.ts';
import { createAnthropicProvider } from './anthropic/index.ts';
import type { AnthropicOptions } from './anthropic/chat.ts';

export const PROVIDER_NAMES = ['openai', 'anthropic'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

export function isProviderName(name: string): name is ProviderName {
  return (PROVIDER_NAMES as readonly string[]).includes(name);
}

export interface ProvidersOptions {
  anthropic?: AnthropicOptions;
}

export function createProviders(http: UpstreamHttp, opts: ProvidersOptions = {}): Map<ProviderName, Provider> {
  const registry: Record<ProviderName, Provider> = {
    openai: createOpenAIProvider(http),
    anthropic: createAnthropicProvider(http, opts.anthropic),
  };
  return new Map(PROVIDER_NAMES.map((name) => [name, registry[name]]));
}
