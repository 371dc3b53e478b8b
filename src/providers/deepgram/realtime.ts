// Deepgram live streaming: `{base_url}/v1/listen?encoding=linear16|mulaw|alaw&sample_rate=…&channels=1&model=…`
// upgraded to a WebSocket, `Authorization: Token <key>`. Audio as binary frames in the client's own
// G.711 law, or linear16, at the socket's rate. The gateway's VAD commits with `{"type":"Finalize"}`:
// Deepgram flushes what it holds as `Results` with `is_final` (several, possibly), the last one
// marked `from_finalize`; their transcripts together are the utterance's text. Interim results are
// not asked for (they replace each other, so they are not deltas). `CloseStream` says goodbye.
import { nativeFormat, NATIVE_ENCODING_NAMES, openUpstreamSocket } from '../realtime-socket.ts';
import type { RealtimeCapability } from '../types.ts';
import { isObject } from '../validate.ts';

/** The first alternative's transcript of a Results message. */
function transcriptOf(m: Record<string, unknown>): string {
  const alt = isObject(m.channel) && Array.isArray(m.channel.alternatives) ? m.channel.alternatives[0] : null;
  return isObject(alt) && typeof alt.transcript === 'string' ? alt.transcript.trim() : '';
}

export function deepgramRealtime(): RealtimeCapability {
  return {
    format: nativeFormat,
    open(route, req, signal) {
      const fmt = nativeFormat(req);
      const query: Record<string, string> = { encoding: NATIVE_ENCODING_NAMES[fmt.encoding], sample_rate: String(fmt.sampleRate), channels: '1', model: route.upstreamModel, interim_results: 'false', punctuate: 'true' };
      if (req.language) query.language = req.language;
      return openUpstreamSocket({
        route,
        path: '/v1/listen',
        query,
        headers: { authorization: `Token ${route.apiKey}` },
        format: fmt,
        signal,
        handlers: {
          audio: (bytes, s) => s.sendBinary(bytes),
          commit: (s) => s.sendJson({ type: 'Finalize' }),
          goodbye: (s) => s.sendJson({ type: 'CloseStream' }),
          message: (m, turns) => {
            const turn = turns[0];
            if (m.type !== 'Results' || !turn || m.is_final !== true) return;
            const text = transcriptOf(m);
            if (text) turn.parts.push(text);
            if (m.from_finalize === true) turn.finish({ text: turn.parts.join(' ') });
          },
        },
      });
    },
  };
}
