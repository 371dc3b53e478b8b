// One realtime socket's in-memory side: the actor's resources. Audio frames are data handled here
// (decode → PCM16 → server VAD → utterance → recogniser); the actor (machines/realtime-session)
// gets control events only: utterance committed, transcript final, upstream failed, client closed,
// and a checkpoint of the audio received every `progressMs` (speech started changes nothing in it:
// not sent, an event less per utterance).
//
// What it tells the client goes through `SessionSink` as SessionOutput events; the WebSocket edge
// (src/ws/) turns them into OpenAI-shaped frames. Utterances are recognised as soon as they are
// committed and answered in commit order; at most `maxPendingUtterances` wait for the recogniser
// (past that the upstream is too slow for the audio: the session ends with `model_unavailable`).
// Each recognition is bounded by `utteranceTimeoutMs`; a failure ends the session with an `error`
// frame at once, never a hang.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ApiError, echo } from '../errors.ts';
import type { VoiceDetector, VoiceDetectors, VadEvent } from '../speech/vad.ts';
import type { EndReason, RealtimeSessionEvent, SessionError } from '../../machines/realtime-session.machine.ts';
import { AudioBuffer } from '../speech/audio-buffer.ts';
import type { Resampler } from '../speech/resample.ts';
import { createDecoder, workingRate, type AudioDecoder, type Encoding, type InputRate } from './decoder.ts';
import type { SessionResources } from './kind.ts';
import type { Heard } from '../providers/types.ts';
import { DeltaText } from './delta-text.ts';
import type { SessionRecogniser } from './recognisers.ts';

/** OpenAI's server_vad settings; null turns detection off (the client commits). */
export interface TurnDetection {
  type: 'server_vad';
  threshold: number;
  prefix_padding_ms: number;
  silence_duration_ms: number;
}

export const DEFAULT_TURN_DETECTION: TurnDetection = { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 };

export interface SessionParams {
  sessionId: string;
  requestId: string;
  model: string;
  language: string | null;
  /** The client's rate; the session works at `workingRate` of it. */
  sampleRate: InputRate;
  encoding: Encoding;
  returnTimestamps: boolean;
}

/** What the session tells its client (the edge makes frames of them). */
export type SessionOutput =
  | { type: 'created'; session: SessionDescription }
  | { type: 'updated'; session: SessionDescription; via: SessionUpdate['via'] }
  | { type: 'speech_started'; itemId: string; audioStartMs: number }
  | { type: 'speech_stopped'; itemId: string; audioEndMs: number }
  | { type: 'committed'; itemId: string; previousItemId: string | null }
  | { type: 'cleared' }
  | { type: 'delta'; itemId: string; delta: string }
  | { type: 'completed'; itemId: string; transcript: string; start: number; end: number; seconds: number }
  | { type: 'error'; error: SessionError & { param?: string } }
  | { type: 'done' };

/**
 * What a client's session update asks (OpenAI's GA `session.update` or its beta
 * `transcription_session.update`, read by the edge). An absent field leaves the setting as it is.
 * Every setting that can be taken is applied; each one that cannot is reported on its own (`param`
 * names the field in the client's own frame). The format and the language may change until the
 * socket's first audio; after it, a change of them is refused (the rest of the update applies).
 */
export interface SessionUpdate {
  turnDetection?: TurnDetection | null;
  /** `sampleRate` null: the socket's own when `encoding` is the same, else the encoding's default (pcm 24 kHz, the others 8 kHz). */
  format?: { encoding: Encoding; sampleRate: InputRate | null; param: string };
  language?: { tag: string; param: string };
  /** The model named in the update: it must be the socket's (chosen by its `model` query parameter). */
  model?: { name: string; param: string };
  /** Which event asked: the answer is `session.updated` or `transcription_session.updated`. */
  via: 'session.update' | 'transcription_session.update';
  /** Settings the edge could not read (a bad value, an unknown field), each reported as an error. */
  refused: ApiError[];
  /** How many settings the edge read (taken, or applied above); with none taken and none refused, the update is an echo. */
  taken: number;
}

/** A session's recogniser and input resampler, built for its params (again, when the format changes before any audio). */
export interface SessionPipeline {
  recogniser: SessionRecogniser;
  /** 24 kHz input to the working 16 kHz (owned by the session: destroyed with it); null otherwise. */
  inputResampler: Resampler | null;
}

export interface SessionDescription extends SessionParams {
  turnDetection: TurnDetection | null;
  recognition: 'streaming' | 'utterance';
}

export interface SessionSink {
  send(out: SessionOutput): void;
  /** Ends the connection (after what was sent); `reason` picks the close code. */
  close(reason: EndReason): void;
}

export interface SessionLimits {
  progressMs: number;
  idleTimeoutMs: number;
  maxUtteranceMs: number;
  maxPendingUtterances: number;
  utteranceTimeoutMs: number;
  /** How often the key is authenticated again while the socket is open. */
  reauthIntervalMs: number;
}

export interface SessionDeps {
  params: SessionParams;
  limits: SessionLimits;
  detectors: VoiceDetectors;
  /** Builds the recogniser and input resampler for the params (at start, and when an update changes the format or language). */
  pipeline(params: SessionParams): SessionPipeline;
  /** The model's own tag for a language asked in an update; throws ApiError when the model does not offer it. */
  language(tag: string, param: string): string;
  /** The session's actor (the runtime's `ref(kind, id)`). */
  actor: { send(event: RealtimeSessionEvent, opts: { wait: 'applied' | 'durable' }): Promise<unknown> };
  sink: SessionSink;
  /** Authenticates the socket's key again; throws ApiError when it no longer may (revoked, expired). */
  recheck(): Promise<void>;
  log: Logger;
  now(): number;
  /** Called once when the session is over (closed and billed, or given up). */
  onFinished(chargedSeconds: number | null): void;
}

/** The smallest audio a manual commit takes (OpenAI refuses a commit under 100 ms). */
const MIN_COMMIT_MS = 100;
/** Audio kept before speech in VAD mode beyond the prefix padding (the detector's onset lag). */
const KEEP_EXTRA_MS = 500;

export class RealtimeSession implements SessionResources {
  private params: SessionParams;
  private decoder!: AudioDecoder;
  private buffer!: AudioBuffer;
  private rate!: 8000 | 16000;
  private recogniser!: SessionRecogniser;
  private inputResampler: Resampler | null = null;
  /** Audio bytes came (the format and language are fixed from then on). */
  private audioStarted = false;
  private turn: TurnDetection | null = DEFAULT_TURN_DETECTION;
  private vad: VoiceDetector | null = null;
  /** Session ms at which the current detector started (its clock is relative to it). */
  private vadOriginMs = 0;
  /** The current speech (VAD) or uncommitted buffer (manual) start, in samples; null when none. */
  private itemStart: number | null = null;
  private itemId: string | null = null;
  /** Manual mode: where the uncommitted buffer begins, in samples. */
  private manualStart = 0;
  private previousItemId: string | null = null;
  /** Items with text heard and not yet completed: their deltas, held while an earlier item is unanswered. */
  private readonly texts = new Map<string, ItemText>();
  private pending = 0;
  private answered: Promise<void> = Promise.resolve();
  private readonly abort = new AbortController();
  private progressTimer: NodeJS.Timeout | null = null;
  private lastProgressMs = -1;
  private lastAuthAt: number;
  private authChecking = false;
  private lastAudioAt: number;
  private ended = false;
  private finished = false;

  constructor(private readonly deps: SessionDeps) {
    this.params = { ...deps.params };
    this.lastAudioAt = deps.now();
    this.lastAuthAt = deps.now();
    this.build();
  }

  /** The audio path for `params`: decoder, buffer, detector, recogniser (the old ones, if any, closed). */
  private build(): void {
    this.recogniser?.close();
    this.inputResampler?.destroy();
    this.vad?.destroy();
    this.rate = workingRate(this.params.sampleRate);
    this.decoder = createDecoder(this.params.encoding);
    this.buffer = new AudioBuffer(Math.ceil(((this.deps.limits.maxUtteranceMs + DEFAULT_TURN_DETECTION.prefix_padding_ms + KEEP_EXTRA_MS + 5_000) * this.rate) / 1000));
    const { recogniser, inputResampler } = this.deps.pipeline(this.params);
    this.recogniser = recogniser;
    this.inputResampler = inputResampler;
    this.vad = this.newDetector(this.turn);
    this.vadOriginMs = 0;
    recogniser.listen?.((heard) => this.heardSpeech(heard));
  }

  /** Audio received so far, ms. */
  get audioMs(): number {
    return (this.buffer.total * 1000) / this.rate;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  describe(): SessionDescription {
    return { ...this.params, turnDetection: this.turn, recognition: this.recogniser.mode };
  }

  /** Starts the checkpoints and greets the client. */
  start(): void {
    this.deps.sink.send({ type: 'created', session: this.describe() });
    this.progressTimer = setInterval(() => this.tick(), this.deps.limits.progressMs);
    this.progressTimer.unref();
  }

  // ------------------------------------------------------------------ client events

  /** Raw audio in the declared encoding (a binary frame, or an append's decoded base64). */
  audio(bytes: Uint8Array): void {
    if (this.ended) return;
    if (bytes.length > 0) this.audioStarted = true;
    const decoded = this.decoder.decode(bytes);
    const samples = this.inputResampler ? this.inputResampler.process(decoded) : decoded;
    if (samples.length === 0) return;
    this.lastAudioAt = this.deps.now();
    const at = this.buffer.total;
    this.buffer.append(samples);
    this.recogniser.audio(samples);
    if (this.vad) this.takeVad(this.vad.push(samples), at + samples.length);
    else if (this.buffer.total - this.manualStart >= this.samplesOf(this.deps.limits.maxUtteranceMs)) {
      this.commitRange(this.manualStart, this.buffer.total, this.itemId); // a client that never commits: cut at the limit
      this.manualStart = this.buffer.total;
      this.itemId = null;
    }
    if (!this.vad || this.itemStart === null) this.trimBuffer();
  }

  /** input_audio_buffer.commit: what is buffered (or the speech in progress) becomes an item. */
  commit(): void {
    if (this.ended) return;
    const from = this.vad ? this.itemStart : this.manualStart;
    if (from === null || this.buffer.total - from < this.samplesOf(MIN_COMMIT_MS)) {
      throw new ApiError('invalid_request', `Error committing input audio buffer: the buffer holds less than ${MIN_COMMIT_MS} ms of audio.`);
    }
    const itemId = this.itemId;
    this.commitRange(from, this.buffer.total, itemId);
    if (this.vad) this.restartDetector(); // the speech committed by hand is over for the detector
    else this.manualStart = this.buffer.total;
    this.itemId = null;
  }

  /** input_audio_buffer.clear: drops what is buffered and not committed. */
  clear(): void {
    if (this.ended) return;
    this.dropOpenItem();
    this.manualStart = this.buffer.total;
    if (this.vad) this.restartDetector();
    this.buffer.trim(this.buffer.total);
    this.deps.sink.send({ type: 'cleared' });
  }

  /**
   * session.update / transcription_session.update: turn detection on (with its settings) or off;
   * the audio format and the language, until the first audio. Every setting that can be taken is
   * applied; each refused one (read by the edge, or refused here) is sent as an `error` naming it,
   * then the session as it now is, unless every setting the update held was refused.
   */
  update(u: SessionUpdate): void {
    if (this.ended) return;
    const refused = [...u.refused];
    let applied = u.taken;
    const refuse = (err: ApiError) => {
      refused.push(err);
      applied--;
    };
    if (u.model && u.model.name !== this.params.model) {
      refuse(new ApiError('invalid_request', `This socket transcribes with '${this.params.model}' (its 'model' query parameter), not '${echo(u.model.name)}'.`, { param: u.model.param }));
    }
    const next = { ...this.params };
    if (u.format) {
      const { encoding, sampleRate } = u.format;
      const rate = sampleRate ?? (encoding === this.params.encoding ? this.params.sampleRate : encoding === 'pcm_s16le' ? 24000 : 8000);
      if ((encoding !== this.params.encoding || rate !== this.params.sampleRate) && this.audioStarted) {
        refuse(new ApiError('invalid_request', "The socket's audio format cannot change once audio has arrived; open a new socket for other audio.", { param: u.format.param }));
      } else {
        next.encoding = encoding;
        next.sampleRate = rate;
      }
    }
    if (u.language) {
      try {
        const language = this.deps.language(u.language.tag, u.language.param);
        if (language !== this.params.language && this.audioStarted) {
          throw new ApiError('invalid_request', "The socket's language cannot change once audio has arrived; open a new socket for another language.", { param: u.language.param });
        }
        next.language = language;
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        refuse(err);
      }
    }
    for (const err of refused) this.deps.sink.send({ type: 'error', error: { code: err.code, message: err.message, ...(err.options.param !== undefined ? { param: err.options.param } : {}) } });
    if (refused.length > 0 && applied <= 0) return;
    if (u.turnDetection !== undefined) this.turn = u.turnDetection;
    if (next.encoding !== this.params.encoding || next.sampleRate !== this.params.sampleRate || next.language !== this.params.language) {
      this.params = next;
      this.build();
    } else if (u.turnDetection !== undefined) {
      this.dropOpenItem();
      this.manualStart = this.buffer.total;
      this.restartDetector();
    }
    this.deps.sink.send({ type: 'updated', session: this.describe(), via: u.via });
  }

  /** The connection closed (a close frame, or the client vanished): bill and finish. */
  clientGone(vanished: boolean): void {
    if (this.ended) return;
    this.ended = true;
    this.stopWork();
    this.toActor({ type: 'client.closed', audioMs: this.audioMs, vanished });
  }

  /** The server ends the session (shutdown, idle, a limit, the upstream failed): tell the client, close, bill. */
  end(reason: EndReason, error: SessionError | null = null): void {
    if (!this.closeSocket(reason, error)) return;
    const audioMs = this.audioMs;
    if (reason === 'upstream_failed' && error) this.toActor({ type: 'upstream.failed', audioMs, error });
    else this.toActor({ type: 'session.ending', audioMs, reason, ...(error ? { error } : {}) });
  }

  // ------------------------------------------------------------------ the actor's calls (SessionResources)

  ending(reason: EndReason, error: SessionError | null): void {
    // The actor ends it (the wallet ran dry): tell the client; the actor is already closing.
    this.closeSocket(reason, error);
  }

  /** Once: stop the work, send the error (if any) and `done`, close. False when it had ended already. */
  private closeSocket(reason: EndReason, error: SessionError | null): boolean {
    if (this.ended) return false;
    this.ended = true;
    this.stopWork();
    if (error) this.deps.sink.send({ type: 'error', error });
    this.deps.sink.send({ type: 'done' });
    this.deps.sink.close(reason);
    return true;
  }

  closed(chargedSeconds: number): void {
    this.finish(chargedSeconds);
  }

  dispose(): void {
    this.stopWork();
    this.finish(null);
  }

  // ------------------------------------------------------------------ inside

  private finish(chargedSeconds: number | null): void {
    if (this.finished) return;
    this.finished = true;
    this.deps.onFinished(chargedSeconds);
  }

  private stopWork(): void {
    if (this.progressTimer) clearInterval(this.progressTimer);
    this.progressTimer = null;
    this.abort.abort(new Error('session ended'));
    this.recogniser.close();
    this.vad?.destroy();
    this.vad = null;
    this.inputResampler?.destroy();
    this.inputResampler = null;
  }

  /** Every `progressMs`: the checkpoint of audio received; and the idle check. */
  private tick(): void {
    if (this.ended) return;
    const audioMs = Math.floor(this.audioMs);
    if (audioMs !== this.lastProgressMs) {
      this.lastProgressMs = audioMs;
      this.toActor({ type: 'audio.progress', audioMs, now: this.deps.now() });
    }
    if (!this.authChecking && this.deps.now() - this.lastAuthAt >= this.deps.limits.reauthIntervalMs) this.reauthenticate();
    if (this.deps.now() - this.lastAudioAt >= this.deps.limits.idleTimeoutMs) {
      this.end('idle', { code: 'request_timeout', message: `No audio for ${Math.round(this.deps.limits.idleTimeoutMs / 1000)} s; the session is closed.` });
    }
  }

  /** The key, again: revoked or expired ends the session (error frame with the key's code, close 1008). */
  private reauthenticate(): void {
    this.authChecking = true;
    this.lastAuthAt = this.deps.now();
    this.deps.recheck().then(
      () => (this.authChecking = false),
      (err: unknown) => {
        this.authChecking = false;
        if (!(err instanceof ApiError)) return this.deps.log.warn({ err }, 'realtime key check failed; retried at the next interval');
        this.end('unauthorized', { code: err.code, message: err.message });
      },
    );
  }

  private toActor(event: RealtimeSessionEvent): void {
    const durable = event.type !== 'audio.progress' && event.type !== 'transcript.final' && event.type !== 'utterance.committed';
    this.deps.actor.send(event, { wait: durable ? 'durable' : 'applied' }).catch((err: unknown) => {
      this.deps.log.warn({ err, event: event.type }, 'realtime session event not applied');
    });
  }

  private samplesOf(ms: number): number {
    return Math.round((ms * this.rate) / 1000);
  }

  private msOf(samples: number): number {
    return Math.round((samples * 1000) / this.rate);
  }

  private newDetector(turn: TurnDetection | null): VoiceDetector | null {
    if (!turn) return null;
    return this.deps.detectors.create({ sampleRate: this.rate, threshold: turn.threshold, prefix_padding_ms: turn.prefix_padding_ms, silence_duration_ms: turn.silence_duration_ms });
  }

  private restartDetector(): void {
    this.vad?.destroy();
    this.vadOriginMs = this.audioMs;
    this.vad = this.newDetector(this.turn);
    this.itemStart = null;
    this.itemId = null;
  }

  /** The speech in progress is dropped (clear, update): so is what was heard of it. */
  private dropOpenItem(): void {
    if (this.itemId) this.texts.delete(this.itemId);
    this.itemStart = null;
    this.itemId = null;
  }

  /**
   * Text heard of the speech not yet committed (an upstream's partial results, while the speaker
   * talks): it belongs to the item in progress, whose id is minted now if the detector has not
   * seen speech yet (speech_started then carries it).
   */
  private heardSpeech(heard: Heard): void {
    if (this.ended) return;
    this.heard((this.itemId ??= newItemId()), heard);
  }

  private itemText(itemId: string): ItemText {
    let t = this.texts.get(itemId);
    if (!t) this.texts.set(itemId, (t = { text: new DeltaText(), held: [], head: this.pending === 0 }));
    return t;
  }

  /** A delta of `itemId`: sent, or held until every item before it is answered. */
  private heard(itemId: string, heard: Heard): void {
    if (this.ended) return;
    const t = this.itemText(itemId);
    const delta = t.text.take(heard);
    if (!delta) return;
    if (t.head) this.deps.sink.send({ type: 'delta', itemId, delta });
    else t.held.push(delta);
  }

  /** `itemId` is the next to be answered: its held deltas go out. */
  private toHead(itemId: string): void {
    const t = this.itemText(itemId);
    t.head = true;
    for (const delta of t.held.splice(0)) if (!this.ended) this.deps.sink.send({ type: 'delta', itemId, delta });
  }

  /** Keeps only what a coming utterance may need. */
  private trimBuffer(): void {
    if (this.vad) this.buffer.trim(this.buffer.total - this.samplesOf((this.turn?.prefix_padding_ms ?? 0) + KEEP_EXTRA_MS));
    else this.buffer.trim(this.manualStart);
  }

  private takeVad(events: VadEvent[], nowSample: number): void {
    for (const e of events) {
      if (e.type === 'speech_started') {
        this.itemStart = Math.max(this.buffer.first, this.samplesOf(this.vadOriginMs + e.audio_start_ms));
        this.itemId ??= newItemId(); // minted already when the upstream heard it first
        this.deps.sink.send({ type: 'speech_started', itemId: this.itemId, audioStartMs: this.msOf(this.itemStart) });
      } else if (this.itemStart !== null) {
        const end = Math.min(nowSample, this.samplesOf(this.vadOriginMs + e.audio_end_ms));
        this.deps.sink.send({ type: 'speech_stopped', itemId: this.itemId!, audioEndMs: this.msOf(end) });
        this.commitRange(this.itemStart, end, this.itemId);
        this.itemStart = null;
        this.itemId = null;
      }
    }
    // Speech that goes on past the longest utterance: commit it, the rest is a new item.
    if (this.itemStart !== null && nowSample - this.itemStart >= this.samplesOf(this.deps.limits.maxUtteranceMs)) {
      this.deps.sink.send({ type: 'speech_stopped', itemId: this.itemId!, audioEndMs: this.msOf(nowSample) });
      this.commitRange(this.itemStart, nowSample, this.itemId);
      this.itemStart = nowSample;
      this.itemId = newItemId();
      this.deps.sink.send({ type: 'speech_started', itemId: this.itemId, audioStartMs: this.msOf(nowSample) });
    }
  }

  /** Samples [from, to) become item `itemId` (a new id when null): committed, then recognised. */
  private commitRange(from: number, to: number, itemId: string | null): void {
    const id = itemId ?? newItemId();
    this.deps.sink.send({ type: 'committed', itemId: id, previousItemId: this.previousItemId });
    this.previousItemId = id;
    this.toActor({ type: 'utterance.committed', itemId: id });
    if (this.pending >= this.deps.limits.maxPendingUtterances) {
      this.end('upstream_failed', { code: 'model_unavailable', message: 'The transcription upstream is slower than the audio; the session is closed.' });
      return;
    }
    const text = this.itemText(id);
    if (this.pending === 0) this.toHead(id); // nothing before it waits for its answer
    else text.head = false;
    this.pending += 1;
    const samples = this.buffer.slice(from, to);
    const utterance = { itemId: id, startMs: this.msOf(from), endMs: this.msOf(to), samples: () => samples };
    const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.deps.limits.utteranceTimeoutMs)]);
    // Deltas stream once this utterance's answer is the next to go out (held until then).
    const answer = this.recogniser.recognise(utterance, signal, (heard) => this.heard(id, heard));
    answer.catch(() => {});
    // Answers go out in commit order.
    this.answered = this.answered.then(async () => {
      this.toHead(id);
      try {
        const r = await answer;
        if (this.ended) return;
        const rest = text.text.finish(r.text);
        if (rest) this.deps.sink.send({ type: 'delta', itemId: id, delta: rest });
        this.deps.sink.send({ type: 'completed', itemId: id, transcript: r.text, start: r.start, end: r.end, seconds: Math.ceil((utterance.endMs - utterance.startMs) / 1000) });
        this.toActor({ type: 'transcript.final', itemId: id });
      } catch (err) {
        if (this.ended) return;
        const timedOut = (err as Error | undefined)?.name === 'TimeoutError';
        this.deps.log.warn({ err, item_id: id }, 'realtime utterance not recognised');
        this.end('upstream_failed', {
          code: 'model_unavailable',
          message: timedOut ? `The transcription upstream did not answer within ${Math.round(this.deps.limits.utteranceTimeoutMs / 1000)} s; the session is closed.` : 'The transcription upstream failed; the session is closed.',
        });
      } finally {
        this.pending -= 1;
        this.texts.delete(id);
        // The speech in progress is next: what was heard of it goes out.
        if (this.pending === 0 && this.itemId && this.texts.has(this.itemId)) this.toHead(this.itemId);
      }
    });
  }
}

interface ItemText {
  text: DeltaText;
  held: string[];
  /** Every item before it is answered: its deltas go out as they come. */
  head: boolean;
}

const newItemId = (): string => `item_${randomUUID().replaceAll('-', '')}`;
