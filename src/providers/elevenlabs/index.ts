// ElevenLabs provider: text to speech.
import type { UpstreamHttp } from '../http.ts';
import type { Provider } from '../types.ts';
import { elevenLabsSpeak } from './speak.ts';

export function createElevenLabsProvider(http: UpstreamHttp): Provider {
  return { name: 'elevenlabs', speak: elevenLabsSpeak(http) };
}
