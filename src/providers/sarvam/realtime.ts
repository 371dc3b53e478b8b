// Sarvam's realtime speech-to-text WebSocket (shared/reference/speech.md §1d):
// `{base_url}/speech-to-text-realtime/ws?language_code=…&model=…&encoding=linear16|mulaw|alaw&sample_rate=…&endpointing=manual`,
// key in `api-subscription-key`. μ-law and A-law go through as the client sent them (Sarvam takes
// them natively), anything else as linear16 at the socket's rate. Ready at `session.begin`; audio as
// `audio_input {audio: base64}`; the gateway's VAD commits with `flush`, answered by
// `transcript.final {text}`. `transcript.partial {text}` (the utterance's text so far, replacing the
// previous one) comes while the speaker talks: a partial of the audio heard so far (the session
// makes appendable deltas of the words that hold still). `error {is_fatal}` fails the commit, and the
// socket too when fatal.
import { base64Of, nativeFormat, NATIVE_ENCODING_NAMES, openUpstreamSocket, upstreamErrorMessage } from '../realtime-socket.ts';
import type { RealtimeCapability } from '../types.ts';
import { toSarvamLanguage } from './languages.ts';

export function sarvamRealtime(): RealtimeCapability {
  return {
    format: nativeFormat,
    open(route, req, signal) {
      const fmt = nativeFormat(req);
      return openUpstreamSocket({
        route,
        path: '/speech-to-text-realtime/ws',
        query: {
          language_code: toSarvamLanguage(req.language) ?? 'unknown',
          model: route.upstreamModel,
          encoding: NATIVE_ENCODING_NAMES[fmt.encoding],
          sample_rate: String(fmt.sampleRate),
          endpointing: 'manual',
        },
        headers: { 'api-subscription-key': route.apiKey },
        format: fmt,
        signal,
        ready: (m) => m.type === 'session.begin',
        handlers: {
          audio: (bytes, s) => s.sendJson({ type: 'audio_input', audio: base64Of(bytes) }),
          commit: (s) => s.sendJson({ type: 'flush' }),
          goodbye: (s) => s.sendJson({ type: 'end' }),
          message: (m, turns, s) => {
            if (m.type === 'error') {
              const err = upstreamErrorMessage(route.id, m.message);
              if (m.is_fatal === true) s.fail(err);
              else turns[0]?.fail(err);
            } else if (m.type === 'transcript.partial' && typeof m.text === 'string') s.current().partial(m.text);
            else if (m.type === 'transcript.final') turns[0]?.finish({ text: typeof m.text === 'string' ? m.text : '' });
          },
        },
      });
    },
  };
}
