// The offline engines as a provider (`provider: "local"` in a route; no base_url, no key):
// speech-to-text with pocketsphinx (`stt-local`), speech with espeak-ng and festival (`tts-local`).
import type { Provider } from '../types.ts';
import { localTranscribe, type LocalOptions } from './transcribe.ts';
import { localSpeak } from './speak.ts';

export type { LocalOptions } from './transcribe.ts';

export function createLocalProvider(opts: LocalOptions = {}): Provider {
  return { name: 'local', transcribe: localTranscribe(opts), speak: localSpeak(opts.tmpDir ? { tmpDir: opts.tmpDir } : {}) };
}
