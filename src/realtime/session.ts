// One realtime socket's in-memory side: the actor's resources. Audio frames are data handled here
// (decode → PCM16 → the listening stage, src/speech/listening.ts: server VAD → utterance → the
// recogniser); the actor (machines/realtime-session)
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
import { ApiError } from '../errors.ts';
import type { VoiceDetectors } from '../speech/vad.ts';
import type { EndReason, RealtimeSessionEvent, SessionError } from '../../machines/realtime-session.machine.ts';
import { Listener, type HeardUtterance, type UtteranceEnd } from '../speech/listening.ts';
import type { Resampler } from '../speech/resample.ts';
import { createDecoder, workingRate, type AudioDecoder, type Encoding, type InputRate } from './decoder.ts';
import type { SessionResources } from './kind.ts';
import type { Heard, RecognitionContext } from '../providers/types.ts';
import type { SessionRecogniser } from './recognisers.ts';
import { ItemTranscripts, type TranscriptOutput } from './transcripts.ts';
import { checkUpdate, DEFAULT_TURN_DETECTION, detectionOf, type SessionUpdate, type TurnDetection } from './settings.ts';

export interface SessionParams {
  sessionId: string;
  requestId: string;
  model: string;
  language: string | null;
  /** The client's rate; the session works at `workingRate` of it. */
  sampleRate: InputRate;
  encoding: Encoding;
  returnTimestamps: boolean;
  /** The client's prompt and key terms (`input_audio_transcription`), each utterance recognised with those of its commit. */
  context?: RecognitionContext;
}

/** What the session tells its client (the edge makes frames of them). */
export type SessionOutput =
  | { type: 'created'; session: SessionDescription }
  | { type: 'updated'; session: SessionDescription; via: SessionUpdate['via'] }
  | { type: 'speech_started'; itemId: string; audioStartMs: number }
  | { type: 'speech_stopped'; itemId: string; audioEndMs: number }
  | { type: 'committed'; itemId: string; previousItemId: string | null }
  | { type: 'cleared' }
  | TranscriptOutput
  | { type: 'error'; error: SessionError & { param?: string } }
  | { type: 'done' };

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
  /** The audio kept, the detector and the utterances cut (src/speech/listening.ts). */
  private listening!: Listener;
  private rate!: 8000 | 16000;
  private recogniser!: SessionRecogniser;
  private inputResampler: Resampler | null = null;
  /** Audio bytes came (the format and language are fixed from then on). */
  private audioStarted = false;
  private turn: TurnDetection | null = DEFAULT_TURN_DETECTION;
  /** The item of the speech in progress (VAD) or of the uncommitted buffer (manual), once minted. */
  private itemId: string | null = null;
  private previousItemId: string | null = null;
  /** The items' text to the client, in commit order (src/realtime/transcripts.ts). */
  private readonly transcripts = new ItemTranscripts({
    send: (out) => this.deps.sink.send(out),
    ended: () => this.ended,
    openItem: () => this.itemId,
    final: (itemId) => this.toActor({ type: 'transcript.final', itemId }),
    failed: (err, itemId) => this.unrecognised(err, itemId),
  });
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

  /** The audio path for `params`: decoder, listening stage, recogniser (the old ones, if any, closed). */
  private build(): void {
    this.recogniser?.close();
    this.inputResampler?.destroy();
    this.listening?.close();
    this.rate = workingRate(this.params.sampleRate);
    this.decoder = createDecoder(this.params.encoding);
    const { recogniser, inputResampler } = this.deps.pipeline(this.params);
    this.recogniser = recogniser;
    this.inputResampler = inputResampler;
    this.listening = new Listener(
      {
        rate: this.rate,
        detectors: this.deps.detectors,
        detection: detectionOf(this.turn),
        maxUtteranceMs: this.deps.limits.maxUtteranceMs,
        bufferMs: this.deps.limits.maxUtteranceMs + DEFAULT_TURN_DETECTION.prefix_padding_ms + KEEP_EXTRA_MS + 5_000,
        keepExtraMs: KEEP_EXTRA_MS,
        overlap: true,
      },
      { speechStarted: (start) => this.speechStarted(start), utterance: (u, why) => this.utterance(u, why) },
    );
    recogniser.listen?.((heard) => this.heardSpeech(heard));
  }

  /** Audio received so far, ms. */
  get audioMs(): number {
    return this.listening.audioMs;
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
    this.recogniser.audio(samples); // before the utterances these samples end: the recogniser has their audio
    this.listening.push(samples);
  }

  /** input_audio_buffer.commit: what is buffered (or the speech in progress) becomes an item. */
  commit(): void {
    if (this.ended) return;
    const from = this.listening.openStart;
    if (from === null || this.listening.total - from < this.samplesOf(MIN_COMMIT_MS)) {
      throw new ApiError('invalid_request', `Error committing input audio buffer: the buffer holds less than ${MIN_COMMIT_MS} ms of audio.`);
    }
    this.listening.commit();
    this.itemId = null;
  }

  /** input_audio_buffer.clear: drops what is buffered and not committed. */
  clear(): void {
    if (this.ended) return;
    this.dropOpenItem();
    this.listening.clear();
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
    const { next, refused, applied } = checkUpdate(u, this.params, this.audioStarted, (tag, param) => this.deps.language(tag, param));
    for (const err of refused)
      this.deps.sink.send({
        type: 'error',
        error: { code: err.code, message: err.message, ...(err.options.param !== undefined ? { param: err.options.param } : {}) },
      });
    if (refused.length > 0 && applied <= 0) return;
    if (u.turnDetection !== undefined) this.turn = u.turnDetection;
    const rebuild = next.encoding !== this.params.encoding || next.sampleRate !== this.params.sampleRate || next.language !== this.params.language;
    // A new context before any audio is the recogniser's from the start (an upstream socket opens with it).
    const contextBefore = !this.audioStarted && next.context !== this.params.context;
    if (next.context)
      this.params.context = next.context; // from the next utterance on
    else delete this.params.context;
    if (rebuild || contextBefore) {
      this.params = next;
      this.build();
    } else if (u.turnDetection !== undefined) {
      this.dropOpenItem();
      this.listening.setDetection(detectionOf(this.turn));
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
    this.listening.close();
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

  /** The speech in progress is dropped (clear, update): so is what was heard of it. */
  private dropOpenItem(): void {
    if (this.itemId) this.transcripts.drop(this.itemId);
    this.itemId = null;
  }

  /**
   * Text heard of the speech not yet committed (an upstream's partial results, while the speaker
   * talks): it belongs to the item in progress, whose id is minted now if the detector has not
   * seen speech yet (speech_started then carries it).
   */
  private heardSpeech(heard: Heard): void {
    if (this.ended) return;
    this.transcripts.heard((this.itemId ??= newItemId()), heard);
  }

  /** The detector heard speech begin (or the longest utterance cut it: the rest is a new item). */
  private speechStarted(start: number): void {
    this.itemId ??= newItemId(); // minted already when the upstream heard it first
    this.deps.sink.send({ type: 'speech_started', itemId: this.itemId, audioStartMs: this.msOf(start) });
  }

  /** An utterance is cut: the detector's (its speech stopped, or the longest) or the client's (committed, or never committed: the longest). */
  private utterance(u: HeardUtterance, why: UtteranceEnd): void {
    if (why !== 'commit' && this.listening.detecting) this.deps.sink.send({ type: 'speech_stopped', itemId: this.itemId!, audioEndMs: this.msOf(u.to) });
    this.commitRange(u.from, u.to, this.itemId, u.samples);
    this.itemId = null;
  }

  /** Samples [from, to) become item `itemId` (a new id when null): committed, then recognised. */
  private commitRange(from: number, to: number, itemId: string | null, samples: Int16Array): void {
    const id = itemId ?? newItemId();
    this.deps.sink.send({ type: 'committed', itemId: id, previousItemId: this.previousItemId });
    this.previousItemId = id;
    this.toActor({ type: 'utterance.committed', itemId: id });
    if (this.transcripts.pending >= this.deps.limits.maxPendingUtterances) {
      this.end('upstream_failed', { code: 'model_unavailable', message: 'The transcription upstream is slower than the audio; the session is closed.' });
      return;
    }
    const context = this.params.context;
    const utterance = { itemId: id, startMs: this.msOf(from), endMs: this.msOf(to), samples: () => samples, ...(context ? { context } : {}) };
    const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.deps.limits.utteranceTimeoutMs)]);
    this.transcripts.add(id, Math.ceil((utterance.endMs - utterance.startMs) / 1000), (onHeard) => this.recogniser.recognise(utterance, signal, onHeard));
  }

  /** An utterance's recognition failed or timed out: the session ends with an `error` frame. */
  private unrecognised(err: unknown, itemId: string): void {
    const timedOut = (err as Error | undefined)?.name === 'TimeoutError';
    this.deps.log.warn({ err, item_id: itemId }, 'realtime utterance not recognised');
    this.end('upstream_failed', {
      code: 'model_unavailable',
      message: timedOut
        ? `The transcription upstream did not answer within ${Math.round(this.deps.limits.utteranceTimeoutMs / 1000)} s; the session is closed.`
        : 'The transcription upstream failed; the session is closed.',
    });
  }
}

const newItemId = (): string => `item_${randomUUID().replaceAll('-', '')}`;
