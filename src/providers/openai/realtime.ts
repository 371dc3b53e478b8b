// OpenAI Realtime transcription (shared/reference/speech.md §1b): `GET {base_url}/realtime?intent=transcription`
// upgraded to a WebSocket, `Authorization: Bearer <key>`. After `transcription_session.created` the
// gateway sends `transcription_session.update` with the audio format, the route's model and
// language (and the session's context as its `prompt`, key terms folded in: openaiPrompt; sent
// again when it changes), and `turn_detection: null`: the gateway's VAD decides the turns and commits each
// utterance (`input_audio_buffer.commit`). Audio: G.711 μ-law / A-law passed through at 8 kHz
// (`g711_ulaw`, `g711_alaw`), anything else as `pcm16` at 24 kHz. Answers: `…delta` (streamed as
// deltas), `…completed` (the text), `…failed` and `error` (the commit fails).
import { base64Of, openUpstreamSocket, upstreamErrorMessage } from '../realtime-socket.ts';
import type { RealtimeAudioFormat, RealtimeCapability, RealtimeOpenRequest, RecognitionContext } from '../types.ts';
import { isObject } from '../validate.ts';
import { openaiPrompt } from './transcribe.ts';

const FORMAT_NAMES = { mulaw: 'g711_ulaw', alaw: 'g711_alaw', pcm_s16le: 'pcm16' } as const;

function format(req: RealtimeOpenRequest): RealtimeAudioFormat {
  if (req.sampleRate === 8000 && (req.encoding === 'mulaw' || req.encoding === 'alaw')) return { encoding: req.encoding, sampleRate: 8000 };
  return { encoding: 'pcm_s16le', sampleRate: 24_000 };
}

export function openaiRealtime(): RealtimeCapability {
  return {
    format,
    async open(route, req, signal) {
      const fmt = format(req);
      /** The session's `input_audio_transcription`: the route's model, the language, the context as its prompt. */
      const transcriptionOf = (context: RecognitionContext | undefined) => {
        const out: Record<string, string> = { model: route.upstreamModel };
        if (req.language) out.language = req.language.split('-')[0]!.toLowerCase();
        out.prompt = openaiPrompt(context) ?? '';
        return out;
      };
      const up = await openUpstreamSocket({
        route,
        path: '/realtime',
        query: { intent: 'transcription' },
        headers: { authorization: `Bearer ${route.apiKey}` },
        format: fmt,
        signal,
        ready: (m) => m.type === 'transcription_session.created' || m.type === 'session.created',
        handlers: {
          audio: (bytes, s) => s.sendJson({ type: 'input_audio_buffer.append', audio: base64Of(bytes) }),
          commit: (s) => s.sendJson({ type: 'input_audio_buffer.commit' }),
          configure: (context, s) => s.sendJson({ type: 'transcription_session.update', session: { input_audio_transcription: transcriptionOf(context) } }),
          message: (m, turns) => {
            const item = typeof m.item_id === 'string' ? m.item_id : null;
            if (m.type === 'input_audio_buffer.committed') {
              const waiting = turns.find((t) => t.id === null);
              if (waiting) waiting.id = item;
              return;
            }
            if (m.type === 'error') return turns[0]?.fail(upstreamErrorMessage(route.id, isObject(m.error) ? m.error.message : undefined));
            const turn = item === null ? undefined : turns.find((t) => t.id === item);
            if (!turn) return;
            if (m.type === 'conversation.item.input_audio_transcription.delta' && typeof m.delta === 'string') turn.delta(m.delta);
            else if (m.type === 'conversation.item.input_audio_transcription.completed')
              turn.finish({ text: typeof m.transcript === 'string' ? m.transcript : '' });
            else if (m.type === 'conversation.item.input_audio_transcription.failed')
              turn.fail(upstreamErrorMessage(route.id, isObject(m.error) ? m.error.message : undefined));
          },
        },
      });
      const transcription = transcriptionOf(req.context);
      up.sendJson({
        type: 'transcription_session.update',
        session: { input_audio_format: FORMAT_NAMES[fmt.encoding], input_audio_transcription: transcription, turn_detection: null },
      });
      return up;
    },
  };
}
