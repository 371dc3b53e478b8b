// Frames ↔ events of the realtime socket, in OpenAI's realtime transcription shapes
// (shared/reference/speech.md §1b) plus the spec's fields: `request_id` on
// transcription_session.created, `start`/`end` (seconds) on …completed when return_timestamps.
import { randomUUID } from 'node:crypto';
import { ApiError, ERRORS, type ErrorCode } from '../errors.ts';
import type { Encoding, InputRate } from '../realtime/decoder.ts';
import type { SessionDescription, SessionOutput } from '../realtime/session.ts';
import { DEFAULT_TURN_DETECTION, type SessionUpdate, type TurnDetection } from '../realtime/settings.ts';
import { readKeyTerms } from '../shared/recognition-context.ts';
import { brokenRule } from '../shared/strings.ts';

/** What a client frame asks for. */
export type ClientEvent =
  | { type: 'input_audio_buffer.append'; audio: Buffer; eventId: string | null }
  | { type: 'input_audio_buffer.commit'; eventId: string | null }
  | { type: 'input_audio_buffer.clear'; eventId: string | null }
  | { type: 'session.update' | 'transcription_session.update'; update: SessionUpdate; eventId: string | null };

/** A client frame that cannot be taken: answered with an `error` frame, the session goes on. */
export class FrameError extends ApiError {
  constructor(
    message: string,
    readonly eventId: string | null,
    param?: string,
  ) {
    super('invalid_request', message, param !== undefined ? { param } : {});
  }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** OpenAI's beta names of the socket's encodings (`input_audio_format`); `linear32` is ours. */
const FORMATS: Record<Encoding, string> = { pcm_s16le: 'pcm16', mulaw: 'g711_ulaw', alaw: 'g711_alaw', linear32: 'linear32' };
/** OpenAI's GA names (`audio.input.format.type`); `audio/x-linear32` is ours. */
const GA_FORMATS: Record<Encoding, string> = { pcm_s16le: 'audio/pcm', mulaw: 'audio/pcmu', alaw: 'audio/pcma', linear32: 'audio/x-linear32' };

const encodingNamed = (names: Record<Encoding, string>, name: unknown): Encoding | undefined =>
  (Object.keys(names) as Encoding[]).find((e) => names[e] === name);

/** Parses a text frame. Throws FrameError for anything malformed. */
export function parseClientFrame(text: string): ClientEvent {
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
      if (typeof audio !== 'string' || audio.length % 4 !== 0 || !BASE64.test(audio))
        throw new FrameError("'audio' must be base64-encoded audio in the session's encoding.", eventId, 'audio');
      return { type: m.type, audio: Buffer.from(audio, 'base64'), eventId };
    }
    case 'input_audio_buffer.commit':
    case 'input_audio_buffer.clear':
      return { type: m.type, eventId };
    case 'transcription_session.update':
      return { type: m.type, update: readBetaUpdate(m.session, eventId), eventId };
    case 'session.update':
      return { type: m.type, update: readGaUpdate(m.session, eventId), eventId };
    default:
      throw new FrameError(`Unknown event type '${m.type.slice(0, 100)}'.`, eventId, 'type');
  }
}

type Fields = Record<string, unknown>;

/** `value` as an object whose keys are all in `known` (else FrameError naming the first other). */
function objectOf(value: unknown, known: readonly string[], param: string, eventId: string | null): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new FrameError(`'${param}' must be an object.`, eventId, param);
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new FrameError(`Unknown field '${param}.${key.slice(0, 100)}'.`, eventId, `${param}.${key.slice(0, 100)}`);
  }
  return value as Fields;
}

/**
 * Reads an update's settings one by one: a setting that cannot be taken (a bad value, an unknown
 * field) is put in `update.refused` and the others are still read, so the session applies every
 * valid one and reports only the invalid ones. `container` is as objectOf, with each unknown key
 * refused on its own.
 */
class UpdateReader {
  constructor(
    readonly update: SessionUpdate,
    private readonly eventId: string | null,
  ) {}

  /** Reads one setting (counted in `update.taken` when it can be taken); its FrameError is recorded, not thrown. */
  take(read: () => void): void {
    if (this.within(read)) this.update.taken++;
  }

  /** Reads a group of settings (an object holding them); a FrameError about the group itself is recorded. */
  within(read: () => void): boolean {
    try {
      read();
      return true;
    } catch (err) {
      if (!(err instanceof FrameError)) throw err;
      this.update.refused.push(err);
      return false;
    }
  }

  /** `value` as an object (else FrameError); each key not in `known` refused by name. */
  container(value: unknown, known: readonly string[], param: string): Fields {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new FrameError(`'${param}' must be an object.`, this.eventId, param);
    const out: Fields = {};
    for (const [key, v] of Object.entries(value)) {
      if (known.includes(key)) out[key] = v;
      else this.update.refused.push(new FrameError(`Unknown field '${param}.${key.slice(0, 100)}'.`, this.eventId, `${param}.${key.slice(0, 100)}`));
    }
    return out;
  }
}

/** OpenAI's beta `transcription_session.update {session: {input_audio_format, input_audio_transcription, turn_detection, …}}`. */
function readBetaUpdate(session: unknown, eventId: string | null): SessionUpdate {
  const r = new UpdateReader({ via: 'transcription_session.update', refused: [], taken: 0 }, eventId);
  const s = r.container(session, ['turn_detection', 'input_audio_format', 'input_audio_transcription', 'input_audio_noise_reduction', 'include'], 'session');
  if (s.input_audio_format !== undefined) {
    r.take(() => {
      const encoding = encodingNamed(FORMATS, s.input_audio_format);
      if (!encoding) throw new FrameError(`'input_audio_format' is one of ${Object.values(FORMATS).join(', ')}.`, eventId, 'session.input_audio_format');
      r.update.format = { encoding, sampleRate: null, param: 'session.input_audio_format' };
    });
  }
  readTranscription(s.input_audio_transcription, 'session.input_audio_transcription', r, eventId);
  if (s.input_audio_noise_reduction !== undefined)
    r.take(() => readNoiseReduction(s.input_audio_noise_reduction, 'session.input_audio_noise_reduction', eventId));
  if (s.include !== undefined) r.take(() => readInclude(s.include, eventId));
  if ('turn_detection' in s) r.take(() => (r.update.turnDetection = readTurnDetection(s.turn_detection, 'session.turn_detection', eventId)));
  return r.update;
}

/**
 * OpenAI's GA `session.update {session: {type: "transcription", audio: {input: {format,
 * noise_reduction, transcription, turn_detection}}, include}}` (openai 6.x's
 * RealtimeTranscriptionSessionCreateRequest). Another session `type` refuses the whole update (it
 * asks for another kind of session); anything else is read setting by setting (UpdateReader).
 */
function readGaUpdate(session: unknown, eventId: string | null): SessionUpdate {
  const r = new UpdateReader({ via: 'session.update', refused: [], taken: 0 }, eventId);
  const s = r.container(session, ['type', 'audio', 'include'], 'session');
  if (s.type !== 'transcription') throw new FrameError("This socket is for transcription: 'session.type' is 'transcription'.", eventId, 'session.type');
  if (s.include !== undefined) r.take(() => readInclude(s.include, eventId));
  if (s.audio === undefined) return r.update;
  r.within(() => {
    const audio = r.container(s.audio, ['input'], 'session.audio');
    if (audio.input === undefined) return;
    const input = r.container(audio.input, ['format', 'noise_reduction', 'transcription', 'turn_detection'], 'session.audio.input');
    if (input.format !== undefined) r.take(() => (r.update.format = readGaFormat(input.format, eventId)));
    if (input.noise_reduction !== undefined) r.take(() => readNoiseReduction(input.noise_reduction, 'session.audio.input.noise_reduction', eventId));
    readTranscription(input.transcription, 'session.audio.input.transcription', r, eventId);
    if ('turn_detection' in input)
      r.take(() => (r.update.turnDetection = readTurnDetection(input.turn_detection, 'session.audio.input.turn_detection', eventId)));
  });
  return r.update;
}

const GA_RATES: Record<Encoding, readonly number[]> = { pcm_s16le: [24000, 16000, 8000], mulaw: [8000, 16000], alaw: [8000, 16000], linear32: [16000, 8000] };

function readGaFormat(value: unknown, eventId: string | null): NonNullable<SessionUpdate['format']> {
  const param = 'session.audio.input.format';
  const f = objectOf(value, ['type', 'rate'], param, eventId);
  const encoding = encodingNamed(GA_FORMATS, f.type);
  if (!encoding) throw new FrameError(`'${param}.type' is one of ${Object.values(GA_FORMATS).join(', ')}.`, eventId, `${param}.type`);
  if (f.rate !== undefined && !GA_RATES[encoding].includes(f.rate as number))
    throw new FrameError(`'${param}.rate' for ${GA_FORMATS[encoding]} is one of ${GA_RATES[encoding].join(', ')}.`, eventId, `${param}.rate`);
  return { encoding, sampleRate: (f.rate as InputRate | undefined) ?? null, param };
}

/**
 * `{model, language, prompt, key_terms}`: the model is the socket's (its `model` query parameter);
 * the language may change until the first audio; the prompt ('' or null clears it) and the key terms
 * (the gateway's extension, checked as the forms' `key_terms[]`; [] clears them) at any time.
 */
function readTranscription(value: unknown, param: string, r: UpdateReader, eventId: string | null): void {
  if (value === undefined) return;
  r.within(() => {
    const t = r.container(value, ['model', 'language', 'prompt', 'key_terms'], param);
    if (t.model !== undefined) {
      r.take(() => {
        if (typeof t.model !== 'string') throw new FrameError(`'${param}.model' is a string.`, eventId, `${param}.model`);
        r.update.model = { name: t.model.slice(0, 200), param: `${param}.model` };
      });
    }
    if (t.language !== undefined && t.language !== null && t.language !== '') {
      r.take(() => {
        if (typeof t.language !== 'string' || !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(t.language))
          throw new FrameError(`'${param}.language' is a BCP-47 tag such as en or en-US.`, eventId, `${param}.language`);
        r.update.language = { tag: t.language, param: `${param}.language` };
      });
    }
    if (t.prompt !== undefined) {
      r.take(() => {
        if (t.prompt !== null && (typeof t.prompt !== 'string' || t.prompt.length > 4000 || brokenRule(t.prompt, 'free')))
          throw new FrameError(`'${param}.prompt' is a string of at most 4000 characters (no NUL).`, eventId, `${param}.prompt`);
        r.update.prompt = t.prompt ?? '';
      });
    }
    if (t.key_terms !== undefined) {
      r.take(() => {
        const read = Array.isArray(t.key_terms) ? readKeyTerms(t.key_terms) : { problem: 'they are a list of strings' };
        if ('problem' in read) {
          const which = 'index' in read && read.index !== undefined ? ` (term ${read.index + 1})` : '';
          throw new FrameError(`Invalid '${param}.key_terms': ${read.problem}${which}.`, eventId, `${param}.key_terms`);
        }
        r.update.keyTerms = read.terms;
      });
    }
  });
}

/** Noise reduction is not offered: null or OpenAI's shape, taken and not applied (the session reports null). */
function readNoiseReduction(value: unknown, param: string, eventId: string | null): void {
  if (value === undefined || value === null) return;
  const n = objectOf(value, ['type'], param, eventId);
  if (n.type !== undefined && n.type !== 'near_field' && n.type !== 'far_field')
    throw new FrameError(`'${param}.type' is near_field or far_field.`, eventId, `${param}.type`);
}

/** `include`: logprobs are not given; the field is taken (the session reports null). */
function readInclude(value: unknown, eventId: string | null): void {
  if (value === undefined || value === null) return;
  if (!Array.isArray(value) || !value.every((x) => x === 'item.input_audio_transcription.logprobs'))
    throw new FrameError("'session.include' is a list of 'item.input_audio_transcription.logprobs'.", eventId, 'session.include');
}

/** OpenAI's server_vad settings (its defaults for absent fields), or null: off. */
function readTurnDetection(td: unknown, param: string, eventId: string | null): TurnDetection | null {
  if (td === null) return null;
  if (typeof td !== 'object' || Array.isArray(td)) throw new FrameError(`'${param}' is null or an object.`, eventId, param);
  const t = td as Fields;
  if (t.type !== undefined && t.type !== 'server_vad') throw new FrameError("Only 'server_vad' turn detection is offered.", eventId, `${param}.type`);
  const num = (name: 'threshold' | 'prefix_padding_ms' | 'silence_duration_ms', min: number, max: number): number => {
    const v = t[name];
    if (v === undefined) return DEFAULT_TURN_DETECTION[name];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
      throw new FrameError(`'${name}' is a number from ${min} to ${max}.`, eventId, `${param}.${name}`);
    return v;
  };
  return {
    type: 'server_vad',
    threshold: num('threshold', 0, 1),
    prefix_padding_ms: num('prefix_padding_ms', 0, 5000),
    silence_duration_ms: num('silence_duration_ms', 100, 10_000),
  };
}

// randomUUID draws from a cached pool: ~0.2 µs against randomBytes' ~10 µs syscall, on every frame sent.
const eventId = (): string => `event_${randomUUID().replaceAll('-', '')}`;

/** The session's prompt ('' when none, as OpenAI shows it) and its key terms (ours; absent when none). */
const contextFields = (s: SessionDescription) => ({ prompt: s.context?.prompt ?? '', ...(s.context?.keyTerms ? { key_terms: s.context.keyTerms } : {}) });

function sessionFrame(s: SessionDescription) {
  return {
    id: s.sessionId,
    object: 'realtime.transcription_session',
    model: s.model,
    sample_rate: s.sampleRate,
    encoding: s.encoding,
    input_audio_format: FORMATS[s.encoding],
    // OpenAI's beta shape: `language` a string when set, absent for auto-detect (GA's says null).
    input_audio_transcription: { model: s.model, ...(s.language !== null ? { language: s.language } : {}), ...contextFields(s) },
    turn_detection: s.turnDetection,
    return_timestamps: s.returnTimestamps,
    // Ours: `streaming` (an engine fed as audio comes) or `utterance` (each utterance sent whole).
    recognition: s.recognition,
  };
}

/**
 * The session as OpenAI's GA `session.updated` gives a transcription session
 * (RealtimeTranscriptionSessionCreateResponseGA), plus ours: `sample_rate`, `encoding`,
 * `return_timestamps`, `recognition`. The format carries its `rate` (ours may be other than
 * OpenAI's fixed ones). As the document types them: the language a string, absent for
 * auto-detect; noise reduction (not applied) absent; logprobs (not given) `include: []`; the
 * prompt '' when none, and `key_terms` (ours) when set.
 */
function gaSessionFrame(s: SessionDescription) {
  return {
    type: 'transcription',
    object: 'realtime.transcription_session',
    id: s.sessionId,
    audio: {
      input: {
        format: { type: GA_FORMATS[s.encoding], rate: s.sampleRate },
        transcription: { model: s.model, ...(s.language !== null ? { language: s.language } : {}), ...contextFields(s) },
        turn_detection: s.turnDetection,
      },
    },
    include: [],
    sample_rate: s.sampleRate,
    encoding: s.encoding,
    return_timestamps: s.returnTimestamps,
    recognition: s.recognition,
  };
}

/** OpenAI's GA greeting, which its GA clients wait for: sent on OpenAI's URL after the spec's own. */
export function gaCreatedFrame(session: SessionDescription): string {
  return JSON.stringify({ event_id: eventId(), type: 'session.created', session: gaSessionFrame(session) });
}

/**
 * OpenAI's GA greeting on a socket opened with `intent=transcription` and no model: the session
 * as it will start (the query's format, the default turn detection), no transcription model yet
 * (the client's first `session.update` names it; `session.updated` then shows it).
 */
export function gaPendingCreatedFrame(sessionId: string, q: { encoding: Encoding; sampleRate: InputRate; returnTimestamps: boolean }): string {
  const session = {
    type: 'transcription',
    object: 'realtime.transcription_session',
    id: sessionId,
    audio: { input: { format: { type: GA_FORMATS[q.encoding], rate: q.sampleRate }, turn_detection: DEFAULT_TURN_DETECTION } },
    include: [],
    sample_rate: q.sampleRate,
    encoding: q.encoding,
    return_timestamps: q.returnTimestamps,
  };
  return JSON.stringify({ event_id: eventId(), type: 'session.created', session });
}

/** The frame of a session output (JSON text). */
export function serverFrame(out: SessionOutput, ctx: { requestId: string; returnTimestamps: boolean; clientEventId?: string | null }): string {
  const base = { event_id: eventId() };
  switch (out.type) {
    case 'created':
      return JSON.stringify({ ...base, type: 'transcription_session.created', request_id: ctx.requestId, session: sessionFrame(out.session) });
    case 'updated':
      return out.via === 'session.update'
        ? JSON.stringify({ ...base, type: 'session.updated', session: gaSessionFrame(out.session) })
        : JSON.stringify({ ...base, type: 'transcription_session.updated', session: sessionFrame(out.session) });
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
  return JSON.stringify({
    event_id: eventId(),
    type: 'error',
    error: { type, code, message, param: param ?? null, event_id: clientEventId, request_id: requestId },
  });
}
