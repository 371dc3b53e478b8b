// The offline engines as a provider (`provider: "local"` in a route; no base_url, no key):
// speech-to-text with pocketsphinx today; routes of `stt-local` name it.
import type { Provider } from '../types.ts';
import { localTranscribe, type LocalOptions } from './transcribe.ts';

export type { LocalOptions } from './transcribe.ts';

export function createLocalProvider(opts: LocalOptions = {}): Provider {
  return { name: 'local', transcribe: localTranscribe(opts) };
}
