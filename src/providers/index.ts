// The provider registry, keyed by the closed set of provider names a route's `provider` may take.
// A new provider is one folder (src/providers/<name>/, a file per capability) plus one line here.
import type { UpstreamHttp } from './http.ts';
import { UpstreamFiles } from './upload.ts';
import type { Provider } from './types.ts';
import { createOpenAIProvider } from './openai/index.ts';
import { createAnthropicProvider } from './anthropic/index.ts';
import { createSarvamProvider } from './sarvam/index.ts';
import { createDeepgramProvider } from './deepgram/index.ts';
import { createElevenLabsProvider } from './elevenlabs/index.ts';
import { createLocalProvider, type LocalOptions } from './local/index.ts';
import type { AnthropicOptions } from './anthropic/chat.ts';

export const PROVIDER_NAMES = ['openai', 'anthropic', 'sarvam', 'deepgram', 'elevenlabs', 'local', 'simulator', 'twilio', 'exotel'] as const;

/** Providers that run in the gateway itself: their routes take no base_url and no key. */
export const IN_PROCESS_PROVIDERS: readonly string[] = ['local', 'simulator'];

/** Telephony carriers: the only providers a voice model's routes name, and only voice models name them. */
export const CARRIERS: readonly string[] = ['simulator', 'twilio', 'exotel'];

/** The public API a carrier route calls when it names no base_url. */
export const DEFAULT_BASE_URLS: Readonly<Record<string, string>> = { twilio: 'https://api.twilio.com', exotel: 'https://api.in.exotel.com' };
export type ProviderName = (typeof PROVIDER_NAMES)[number];

export function isProviderName(name: string): name is ProviderName {
  return (PROVIDER_NAMES as readonly string[]).includes(name);
}

export interface ProvidersOptions {
  anthropic?: AnthropicOptions;
  /**
   * The client for audio uploads and file fetches (speech-to-text). The composition root passes
   * one and closes it at shutdown; without one, a private one is made (its idle sockets do not
   * hold the process open, but nothing closes it).
   */
  files?: UpstreamFiles;
  /** The offline engines' options (the diarizer). */
  local?: LocalOptions;
}

export function createProviders(http: UpstreamHttp, opts: ProvidersOptions = {}): Map<ProviderName, Provider> {
  const files = opts.files ?? new UpstreamFiles();
  const registry: Record<ProviderName, Provider> = {
    openai: createOpenAIProvider(http, files),
    anthropic: createAnthropicProvider(http, opts.anthropic),
    sarvam: createSarvamProvider(files, http),
    deepgram: createDeepgramProvider(files),
    elevenlabs: createElevenLabsProvider(http),
    local: createLocalProvider(opts.local),
    // Carriers: what a call does with them is src/voice/ (the simulator's callee: src/providers/simulator/).
    simulator: { name: 'simulator' },
    twilio: { name: 'twilio' },
    exotel: { name: 'exotel' },
  };
  return new Map(PROVIDER_NAMES.map((name) => [name, registry[name]]));
}
