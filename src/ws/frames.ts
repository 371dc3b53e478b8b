// Frames ↔ events of the realtime socket, in OpenAI's realtime transcription shapes
// (shared/reference/speech.md §1b) plus the spec's fields: `request_id` on
// transcription_session.created, `start`/`end` (seconds) on …completed when return_timestamps.
import { randomUUID } from 'node:crypto';
import { ApiError, ERRORS, type ErrorCode } from '../errors.ts';
import { DEFAULT_TURN_DETECTION, type SessionDescription, type SessionOutput, type TurnDetection } from '../realtime/session.ts';

/** What a client frame asks for. */
export type ClientEvent =
  | { type: 'input_audio_buffer.append'; audio: Buffer; eventId: string | null }
  | { type: 'input_audio_buffer.commit'; eventId: string | null }
  | { type: 'input_audio_buffer.clear'; eventId: string | null }
  | { type: 'transcription_session.update'; turnDetection: TurnDetection | null | undefined; eventId: string | null };

/** A client frame that cannot be taken: answered with an `error` frame, the session goes on. */
export class FrameError extends ApiError {
  constructor(message: string, readonly eventId: string | null, param?: string) {
    super('invalid_request', message, param !== undefined ? { param } : {});
  }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const FORMATS: Record<string, string> = { pcm_s16le: 'pcm16', mulaw: 'g711_ulaw', alaw: 'g711_alaw', linear32: 'linear32' };

/** Parses a text frame. Throws FrameError for anything malformed. */
export function parseClientFrame(text: string, encoding: string): ClientEvent {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    throw new FrameError('The frame is not valid JSON.', null);
  }
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) throw new FrameError('The frame is not a JSON object.', null);
  const m = msg as Record<string, unknown>;
  const eventId = typeof m.event_id === 'string' ? m.event_id.slice(0, 128) : null;
  if (typeof m.type !== 'string') throw new FrameError("The 'type' field is missing.", eventId, 'type');
  switch (m.type) {
    case 'input_audio_buffer.append': {
      const audio = m.audio;
      if (typeof audio !== 'string' || audio.length % 4 !== 0 || !BASE64.test(audio)) throw new FrameError("'audio' must be base64-encoded audio in the session's encoding.", eventId, 'audio');
      return { type: m.type, audio: Buffer.from(audio, 'base64'), eventId };
    }
    case 'input_audio_buffer.commit':
    case 'input_audio_buffer.clear':
      return { type: m.type, eventId };
    case 'transcription_session.update':
      return { type: m.type, turnDetection: readUpdate(m.session, encoding, eventId), eventId };
    default:
      throw new FrameError(`Unknown event type '${m.type.slice(0, 100)}'.`, eventId, 'type');
  }
}

/** The turn detection an update sets (undefined: unchanged). Other session fields must agree with the socket's. */
function readUpdate(session: unknown, encoding: string, eventId: string | null): TurnDetection | null | undefined {
  if (typeof session !== 'object' || session === null || Array.isArray(session)) throw new FrameError("'session' must be an object.", eventId, 'session');
  const s = session as Record<string, unknown>;
  for (const key of Object.keys(s)) {
    if (!['turn_detection', 'input_audio_format', 'input_audio_transcription', 'input_audio_noise_reduction', 'include'].includes(key)) {
      throw new FrameError(`Unknown session field '${key.slice(0, 100)}'.`, eventId, `session.${key.slice(0, 100)}`);
    }
  }
  if (s.input_audio_format !== undefined && s.input_audio_format !== FORMATS[encoding]) {
    throw new FrameError(`The socket's audio is '${FORMATS[encoding]}' (its 'encoding' query parameter); it cannot change.`, eventId, 'session.input_audio_format');
  }
  if (!('turn_detection' in s)) return undefined;
  const td = s.turn_detection;
  if (td === null) return null;
  if (typeof td !== 'object' || Array.isArray(td)) throw new FrameError("'turn_detection' is null or an object.", eventId, 'session.turn_detection');
  const t = td as Record<string, unknown>;
  if (t.type !== undefined && t.type !== 'server_vad') throw new FrameError("Only 'server_vad' turn detection is offered.", eventId, 'session.turn_detection.type');
  const num = (name: 'threshold' | 'prefix_padding_ms' | 'silence_duration_ms', min: number, max: number): number => {
    const v = t[name];
    if (v === undefined) return DEFAULT_TURN_DETECTION[name];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) throw new FrameError(`'${name}' is a number from ${min} to ${max}.`, eventId, `session.turn_detection.${name}`);
    return v;
  };
  return { type: 'server_vad', threshold: num('threshold', 0, 1), prefix_padding_ms: num('prefix_padding_ms', 0, 5000), silence_duration_ms: num('silence_duration_ms', 100, 10_000) };
}

// randomUUID draws from a cached pool: ~0.2 µs against randomBytes' ~10 µs syscall, on every frame sent.
const eventId = (): string => `event_${randomUUID().replaceAll('-', '')}`;

function sessionFrame(s: SessionDescription) {
  return {
    id: s.sessionId,
    object: 'realtime.transcription_session',
    model: s.model,
    sample_rate: s.sampleRate,
    encoding: s.encoding,
    input_audio_format: FORMATS[s.encoding],
    input_audio_transcription: { model: s.model, language: s.language, prompt: '' },
    turn_detection: s.turnDetection,
    return_timestamps: s.returnTimestamps,
    // Ours: `streaming` (an engine fed as audio comes) or `utterance` (each utterance sent whole).
    recognition: s.recognition,
  };
}

/** The frame of a session output (JSON text). */
export function serverFrame(out: SessionOutput, ctx: { requestId: string; returnTimestamps: boolean; clientEventId?: string | null }): string {
  const base = { event_id: eventId() };
  switch (out.type) {
    case 'created':
      return JSON.stringify({ ...base, type: 'transcription_session.created', request_id: ctx.requestId, session: sessionFrame(out.session) });
    case 'updated':
      return JSON.stringify({ ...base, type: 'transcription_session.updated', session: sessionFrame(out.session) });
    case 'speech_started':
      return JSON.stringify({ ...base, type: 'input_audio_buffer.speech_started', audio_start_ms: out.audioStartMs, item_id: out.itemId });
    case 'speech_stopped':
      return JSON.stringify({ ...base, type: 'input_audio_buffer.speech_stopped', audio_end_ms: out.audioEndMs, item_id: out.itemId });
    case 'committed':
      return JSON.stringify({ ...base, type: 'input_audio_buffer.committed', item_id: out.itemId, previous_item_id: out.previousItemId });
    case 'cleared':
      return JSON.stringify({ ...base, type: 'input_audio_buffer.cleared' });
    case 'delta':
      return JSON.stringify({ ...base, type: 'conversation.item.input_audio_transcription.delta', item_id: out.itemId, content_index: 0, delta: out.delta });
    case 'completed':
      return JSON.stringify({
        ...base,
        type: 'conversation.item.input_audio_transcription.completed',
        item_id: out.itemId,
        content_index: 0,
        transcript: out.transcript,
        usage: { type: 'duration', seconds: out.seconds },
        ...(ctx.returnTimestamps ? { start: out.start, end: out.end } : {}),
      });
    case 'error':
      return errorFrame(out.error.code, out.error.message, ctx.requestId, out.error.param, ctx.clientEventId ?? null);
    case 'done':
      return JSON.stringify({ ...base, type: 'transcription_session.done' });
  }
}

/** The spec's `error` frame: the envelope's fields plus OpenAI's `param` and `event_id` (the client event at fault). */
export function errorFrame(code: string, message: string, requestId: string, param?: string, clientEventId: string | null = null): string {
  const type = code in ERRORS ? ERRORS[code as ErrorCode].type : 'server_error';
  return JSON.stringify({ event_id: eventId(), type: 'error', error: { type, code, message, param: param ?? null, event_id: clientEventId, request_id: requestId } });
}
