// Deepgram live streaming: `{base_url}/v1/listen?encoding=linear16|mulaw|alaw&sample_rate=…&channels=1&model=…`
// upgraded to a WebSocket, `Authorization: Token <key>`. Audio as binary frames in the client's own
// G.711 law, or linear16, at the socket's rate. The gateway's VAD commits with `{"type":"Finalize"}`:
// Deepgram flushes what it holds as `Results` with `is_final` (several, possibly), the last one
// marked `from_finalize`; their transcripts together are the utterance's text, with the `is_final`
// pieces Deepgram settled on its own before the Finalize (it does every few seconds of speech).
// Interim results (`interim_results=true`: the current piece's hypothesis, each replacing the one
// before) come while the speaker talks: reported as partials of the utterance (its settled pieces
// and the hypothesis), of which the session makes appendable deltas. `CloseStream` says goodbye.
// The session's key terms go in the query as for pre-recorded audio (`deepgramTerms`); a change of
// them is a `Configure {keyterms}` on Nova-3 (Deepgram's mid-stream update), kept as opened before it.
import { nativeFormat, NATIVE_ENCODING_NAMES, openUpstreamSocket } from '../realtime-socket.ts';
import type { RealtimeCapability } from '../types.ts';
import { isObject } from '../validate.ts';
import { deepgramTerms } from './transcribe.ts';

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
      const query: Record<string, string> = {
        encoding: NATIVE_ENCODING_NAMES[fmt.encoding],
        sample_rate: String(fmt.sampleRate),
        channels: '1',
        model: route.upstreamModel,
        interim_results: 'true',
        punctuate: 'true',
      };
      if (req.language) query.language = req.language;
      const params = new URLSearchParams(query);
      for (const [name, value] of deepgramTerms(route.upstreamModel, req.context?.keyTerms)) params.append(name, value);
      return openUpstreamSocket({
        route,
        path: '/v1/listen',
        query: params,
        headers: { authorization: `Token ${route.apiKey}` },
        format: fmt,
        signal,
        handlers: {
          audio: (bytes, s) => s.sendBinary(bytes),
          commit: (s) => s.sendJson({ type: 'Finalize' }),
          goodbye: (s) => s.sendJson({ type: 'CloseStream' }),
          // Nova-3 replaces a stream's keyterms with `Configure` ([] clears them); older models keep their keywords.
          ...(/^nova-3/i.test(route.upstreamModel)
            ? {
                configure: (context, s) => s.sendJson({ type: 'Configure', keyterms: deepgramTerms(route.upstreamModel, context?.keyTerms).map(([, t]) => t) }),
              }
            : {}),
          message: (m, turns, s) => {
            if (m.type !== 'Results') return;
            const heard = s.current();
            const text = transcriptOf(m);
            if (m.is_final !== true) {
              if (text) heard.partial([...heard.parts, text].join(' '));
              return;
            }
            if (text) heard.parts.push(text);
            heard.partial(heard.parts.join(' '), true);
            if (m.from_finalize === true) turns[0]?.finish({ text: heard.parts.join(' ') });
          },
        },
      });
    },
  };
}
