// The realtime transcription service: what the WebSocket edge calls. `open` runs before the upgrade
// and does everything that can refuse with an HTTP status (the per-key socket cap, the model and its
// `streaming` flag, the language, KYC, the first tick's hold, through the Meter); `accept` runs after
// it: the socket's resources (decoder, VAD, recogniser) and its actor, spawned with them.
// `close` ends every session at shutdown (sockets close, then actors finalize and bill).
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ActorRuntime } from '../actors/runtime.ts';
import { ApiError } from '../errors.ts';
import type { Hold } from '../billing/types.ts';
import type { MeteredCall, Meter } from '../metering/meter.ts';
import type { ModelDoc } from '../models/types.ts';
import type { UpstreamRouter } from '../providers/router.ts';
import type { RoutedModel } from '../providers/routes.ts';
import type { RealtimeCapability, ResolvedRoute } from '../providers/types.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';
import { matchLanguage } from '../speech/languages.ts';
import type { UtteranceEngine } from '../speech/pocketsphinx-engine.ts';
import type { Resamplers } from '../speech/resample.ts';
import type { VoiceDetectors } from '../speech/vad.ts';
import { workingRate, type Encoding, type InputRate } from './decoder.ts';
import { REALTIME_KIND, tickEstimate, type RealtimeKind, type SessionSpec } from './kind.ts';
import { streamingLocalRecogniser, utteranceRecogniser, type SessionRecogniser } from './recognisers.ts';
import { upstreamRecogniser } from './upstream-recogniser.ts';
import type { RealtimeSessionInput } from '../../machines/realtime-session.machine.ts';
import { RealtimeSession, type SessionLimits, type SessionParams, type SessionPipeline, type SessionSink } from './session.ts';

export interface RealtimeSettings extends SessionLimits {
  maxSocketsPerKey: number;
  /** Sockets on this instance, all keys together. */
  maxSockets: number;
  /** stt-local sessions on this instance (one pocketsphinx process each). */
  maxLocalEngines: number;
  tickSeconds: number;
  tickMaxAgeMs: number;
  holdTtlMs: number;
  /** How long shutdown waits for sessions to bill. */
  closeTimeoutMs: number;
}

export interface StreamQuery {
  model: string;
  language: string | null;
  sampleRate: InputRate;
  encoding: Encoding;
  returnTimestamps: boolean;
}

export interface RealtimeServiceDeps {
  meter: Meter;
  runtime: ActorRuntime;
  kind: RealtimeKind;
  router: UpstreamRouter;
  resolveRoutes(model: RoutedModel): ResolvedRoute[];
  /** The provider's streaming protocol, for routes with `realtime: true`. */
  realtimeOf(provider: string): RealtimeCapability | undefined;
  detectors(): Promise<VoiceDetectors>;
  resamplers(): Promise<Resamplers>;
  /** A resident offline engine for one socket (stt-local). */
  startEngine(): Promise<UtteranceEngine>;
  settings: RealtimeSettings;
  /** Open sessions and charged seconds (/metrics); none in tests that do not read them. */
  metrics?: { sessions: { inc(): void; dec(): void }; chargedSeconds: { inc(n: number): void } };
  logger: Logger;
  now(): number;
}

/** A socket's place under the caps (RealtimeService.reserve): its session id, freed by `release` (once). */
export interface Reservation {
  readonly sessionId: string;
  /** Whether the place holds one of the instance's local engines (set by `admit`). */
  engine: boolean;
  release(): void;
}

/** A socket admitted before its upgrade: accept it once upgraded, or cancel (nothing is charged). */
export interface Opening {
  readonly params: SessionParams;
  /** `recheck` re-authenticates the socket's key (throws ApiError when it no longer may). */
  accept(sink: SessionSink, recheck: () => Promise<void>): Promise<RealtimeSession>;
  cancel(): void;
}

export class RealtimeService {
  private readonly perKey = new Map<number, number>();
  /** Sockets admitted (opening or open) on this instance, and those of them holding a local engine. */
  private admitted = 0;
  private engines = 0;
  private readonly sessions = new Set<RealtimeSession>();
  private readonly finished = new Map<RealtimeSession, Promise<void>>();

  constructor(private readonly deps: RealtimeServiceDeps) {}

  /** Open sessions on this instance (metrics). */
  get open(): number {
    return this.sessions.size;
  }

  /**
   * A socket's place among this instance's and its key's sockets (the caps), taken before its
   * upgrade. `admit` takes one itself; a socket whose model comes later (OpenAI's
   * `intent=transcription`, the model in its first `session.update`) reserves first, is upgraded
   * holding only its place (nothing metered), and is admitted with it once the model is known.
   */
  reserve(principal: ApiKeyPrincipal): Reservation {
    const { settings } = this.deps;
    const keyId = principal.keyId;
    if (this.admitted >= settings.maxSockets) {
      throw new ApiError(
        'too_many_connections',
        `This gateway instance has ${this.admitted} realtime sockets open, its limit; retry shortly or on another instance.`,
        { headers: { 'retry-after': '1' } },
      );
    }
    const mine = this.perKey.get(keyId) ?? 0;
    if (mine >= settings.maxSocketsPerKey) {
      throw new ApiError('rate_limit_exceeded', `This key has ${mine} realtime sockets open, its limit; close one first.`, { headers: { 'retry-after': '1' } });
    }
    this.perKey.set(keyId, mine + 1);
    this.admitted += 1;
    let released = false;
    const reservation: Reservation = {
      sessionId: `rts_${randomBytes(12).toString('base64url')}`,
      engine: false,
      release: () => {
        if (released) return;
        released = true;
        this.admitted -= 1;
        if (reservation.engine) this.engines -= 1;
        const n = (this.perKey.get(keyId) ?? 1) - 1;
        if (n <= 0) this.perKey.delete(keyId);
        else this.perKey.set(keyId, n);
      },
    };
    return reservation;
  }

  /** Opens the metered session for `query` (its model known), in `reservation`'s place or a new one. */
  async admit(principal: ApiKeyPrincipal, query: StreamQuery, requestId: string, reservation: Reservation = this.reserve(principal)): Promise<Opening> {
    const { settings } = this.deps;
    const releaseSlot = reservation.release;
    let call: MeteredCall & { checked: string | null };
    try {
      call = await this.deps.meter.begin(principal, {
        model: query.model,
        type: 'stt',
        requestId,
        check: (model) => checkModel(model, query),
        estimate: (model) => tickEstimate(model.pricing, settings.tickSeconds),
        holdTtlMs: settings.holdTtlMs,
        // The session's actor settles its ticks, after a restart too (finalize): its holds outlive this process.
        custodial: true,
      });
    } catch (err) {
      releaseSlot();
      throw err;
    }
    if (this.firstRoute(call.model)?.provider === 'local') {
      if (this.engines >= settings.maxLocalEngines) {
        releaseSlot();
        await call.release('error', { seconds: 0 }).catch(() => undefined);
        throw new ApiError(
          'model_unavailable',
          `All ${settings.maxLocalEngines} local speech engines of this instance are in use; retry shortly or pick a cloud stt model.`,
          { headers: { 'retry-after': '5' } },
        );
      }
      this.engines += 1;
      reservation.engine = true;
    }
    const params: SessionParams = {
      sessionId: reservation.sessionId,
      requestId,
      model: call.model._id,
      language: call.checked,
      sampleRate: query.sampleRate,
      encoding: query.encoding,
      returnTimestamps: query.returnTimestamps,
    };
    let settled = false;
    return {
      params,
      cancel: () => {
        if (settled) return;
        settled = true;
        releaseSlot();
        void call.release('client_closed', { seconds: 0 }).catch((err: unknown) => this.deps.logger.warn({ err }, 'realtime hold not released'));
      },
      accept: async (sink, recheck) => {
        if (settled) throw new Error('opening already used');
        settled = true;
        try {
          return await this.start(params, call, sink, recheck, releaseSlot);
        } catch (err) {
          releaseSlot();
          await call.release('error', { seconds: 0 }).catch(() => undefined);
          throw err;
        }
      },
    };
  }

  private async start(
    params: SessionParams,
    call: MeteredCall,
    sink: SessionSink,
    recheck: () => Promise<void>,
    releaseSlot: () => void,
  ): Promise<RealtimeSession> {
    const { settings, runtime, kind } = this.deps;
    const log = this.deps.logger.child({ session_id: params.sessionId, request_id: params.requestId });
    const detectors = await this.deps.detectors();
    const resamplers = await this.deps.resamplers();
    const pipeline = (p: SessionParams): SessionPipeline => ({
      recogniser: this.recogniserFor(call.model, p, resamplers, log),
      inputResampler: p.sampleRate === workingRate(p.sampleRate) ? null : resamplers.create({ from: p.sampleRate, to: workingRate(p.sampleRate), quality: 5 }),
    });
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    const session: RealtimeSession = new RealtimeSession({
      params,
      limits: settings,
      detectors,
      pipeline,
      language: (tag, param) => offeredLanguage(call.model, tag, param),
      actor: runtime.ref(kind, params.sessionId),
      sink,
      recheck,
      log,
      now: this.deps.now,
      onFinished: (charged) => {
        if (this.sessions.delete(session)) this.deps.metrics?.sessions.dec();
        this.finished.delete(session);
        if (charged) this.deps.metrics?.chargedSeconds.inc(charged);
        releaseSlot();
        log.info({ charged_seconds: charged, audio_ms: Math.round(session.audioMs) }, 'realtime session finished');
        done();
      },
    });
    const spec: SessionSpec = { payer: call.payer, pricing: call.model.pricing, startedAt: call.startedAt };
    const input: RealtimeSessionInput<SessionSpec, Hold> = {
      sessionId: params.sessionId,
      account: call.payer.walletId,
      model: params.model,
      requestId: params.requestId,
      createdAt: this.deps.now(),
      tickSeconds: settings.tickSeconds,
      tickMaxAgeMs: settings.tickMaxAgeMs,
      hold: call.hold,
      spec,
    };
    try {
      await runtime.spawn(REALTIME_KIND, params.sessionId, input, { resources: session });
    } catch (err) {
      session.dispose();
      throw err;
    }
    this.sessions.add(session);
    this.deps.metrics?.sessions.inc();
    this.finished.set(session, finished);
    session.start();
    log.info(
      { model: params.model, encoding: params.encoding, sample_rate: params.sampleRate, recognition: session.describe().recognition },
      'realtime session opened',
    );
    return session;
  }

  private recogniserFor(model: ModelDoc, params: SessionParams, resamplers: Resamplers, log: Logger): SessionRecogniser {
    const routes = this.deps.resolveRoutes(model);
    const first = this.firstRoute(model);
    const rate = workingRate(params.sampleRate);
    if (first?.provider === 'local') {
      return streamingLocalRecogniser({ rate, startEngine: this.deps.startEngine, resamplers });
    }
    if (first?.realtime && this.deps.realtimeOf(first.provider)) {
      // The model's routes that stream, in order: the router opens sockets on them (failover between utterances).
      return upstreamRecogniser({
        routes: routes.filter((route) => route.realtime === true),
        router: this.deps.router,
        request: {
          sampleRate: rate,
          encoding: params.encoding,
          ...(params.language ? { language: params.language } : {}),
          ...(params.context ? { context: params.context } : {}),
        },
        resamplers,
        log,
      });
    }
    return utteranceRecogniser({
      rate,
      ...(params.language ? { language: params.language } : {}),
      transcribe: async (req, signal) => (await this.deps.router.transcribe(routes, req, signal)).result,
    });
  }

  /** The route a session starts on: the model's first usable one. */
  private firstRoute(model: ModelDoc): ResolvedRoute | undefined {
    return this.deps.resolveRoutes(model).find((r) => !r.problem);
  }

  /** Shutdown: every session is told (`transcription_session.done`, close 1001), then billed. */
  async close(): Promise<void> {
    const waiting = [...this.finished.values()];
    for (const session of [...this.sessions]) session.end('shutdown');
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, this.deps.settings.closeTimeoutMs).unref());
    await Promise.race([Promise.all(waiting), timeout]);
  }
}

/** The model serves the socket (`streaming`) and offers the language asked for. Returns the language. */
function checkModel(model: ModelDoc, query: StreamQuery): string | null {
  if (model.streaming !== true) {
    throw new ApiError('invalid_request', `The model '${model._id}' does not stream; pick an stt model with 'streaming': true in /v1/models.`, {
      param: 'model',
    });
  }
  return query.language === null ? null : offeredLanguage(model, query.language, 'language');
}

/** The model's own tag for `tag`, or language_not_supported naming `param`. */
function offeredLanguage(model: ModelDoc, tag: string, param: string): string {
  const offered = model.languages ?? [];
  const matched = matchLanguage(tag, offered);
  if (!matched)
    throw new ApiError('language_not_supported', `The model '${model._id}' offers ${offered.join(', ') || 'no languages'}, not '${tag.slice(0, 50)}'.`, {
      param,
    });
  return matched;
}
