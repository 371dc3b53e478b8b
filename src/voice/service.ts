// Outbound AI voice calls (POST /v1/voice/call and the /v1/voice/calls endpoints): the façade the
// HTTP edge calls. `create` does everything that can refuse with a status before a call exists: the
// Idempotency-Key, the account's concurrent calls, the model and its rules (destination country,
// language, voice, agent: `check`, src/voice/checks.ts), KYC and the reservation through the Meter:
// min(max duration, what the wallet affords) at the model's per-minute price, custodial (the call's
// actor settles it, after a restart too). Then the call's actor is spawned with its live side
// (src/voice/live.ts assembles src/voice/media.ts) and dials. list, get, cancel and hang up, and the carriers' status callbacks
// read and message that actor; its public view is src/voice/view.ts.
import { createHmac, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ActorRuntime } from '../actors/runtime.ts';
import type { ActorView } from '../actors/record.ts';
import { ApiError, echo } from '../errors.ts';
import type { Meter } from '../metering/meter.ts';
import { voiceFeatures } from '../models/catalog.ts';
import type { Payer } from '../billing/types.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';
import type { Store } from '../store/port.ts';
import type { ControlReply, VoiceCallInput } from '../../machines/voice-call.machine.ts';
import type { CallbackRequest } from '../providers/carrier.ts';
import { check, endpointing, type CheckDeps, type CheckSettings, type VoiceCallBody } from './checks.ts';
import { IdempotencyKeys } from './idempotency.ts';
import { analysisSpec, listFilter, orderKey, VOICE_KIND, type CallListFilter, type CallSpecFields, type VoiceKind } from './kind.ts';
import { callMedia, type LiveDeps } from './live.ts';
import { voicebotStreamUrl, type VoicebotAsk } from './exotel-flow.ts';
import { adoptedCarriers, type InboundLeg } from './inbound-leg.ts';
import type { CallMedia } from './media.ts';
import { Pacer } from './pacer.ts';
import type { CallTranscripts } from './transcript.ts';
import type { CallRecordings } from './recordings.ts';
import { facts, toObject } from './view.ts';
import type { VoiceCallObject } from './views.ts';
import { requestTransfer } from './transfer-request.ts';
import { Handoffs } from './handoffs.ts';

const DEFAULT_RING_TIMEOUT_SECONDS = 30;
/** A reservation outlives the longest call (ringing, an hour, and a restart's finalize): its sweep only returns one whose actor is gone. */
const HOLD_TTL_MS = (120 + 3600 + 900) * 1000;
/** How long a request waits for the call an identical one (same Idempotency-Key) is placing. */
const IDEMPOTENT_WAIT_MS = 5000;

export interface VoiceSettings extends CheckSettings {
  maxConcurrentCalls: number;
  mediaTimeoutMs: number;
}

/**
 * The voice service's dependencies: `check`'s (the model's rules, src/voice/checks.ts), the live
 * side's (the agent's, the recogniser's, the media stream's: `LiveDeps`, src/voice/live.ts) and the rest.
 * (The intent service is the live side's, whose agent converses; check's reading of a pack is part of it.)
 */
export interface VoiceServiceDeps extends Omit<CheckDeps, 'intent'>, LiveDeps {
  meter: Meter;
  runtime: Pick<ActorRuntime, 'ref' | 'list' | 'spawn'>;
  kind: VoiceKind;
  store: Store;
  /** Who pays for a key's calls (billing's rule: the organization's wallet while a member). */
  payerFor(principal: ApiKeyPrincipal): Promise<Payer>;
  /** The account's own limit on calls at once, an operator's (null: `settings.maxConcurrentCalls`). */
  maxConcurrentCalls(account: string): Promise<number | null>;
  keySecret: string;
  /** The calls' transcripts (src/voice/transcript.ts): the live side appends, the views read. */
  transcripts: CallTranscripts;
  /** The calls' recordings (src/voice/recordings.ts); none: nothing is recorded. */
  recordings?: CallRecordings;
  settings: VoiceSettings;
  logger: Logger;
  now(): number;
}

const CALL_ID = /^call_[0-9a-f]{24}$/;
const newCallId = (): string => `call_${randomBytes(12).toString('hex')}`;

export class VoiceCalls {
  private readonly idempotency: IdempotencyKeys;
  /** Creations in flight per account: the concurrency check and the spawn run one at a time. */
  private readonly creating = new Map<string, Promise<unknown>>();
  /** Live calls on this instance (their media). */
  private readonly live = new Map<string, CallMedia>();
  /** Where transferred calls went, for a carrier that asks after the hand-off (Exotel's Connect applet): in the store, for any instance. */
  readonly handoffs: Handoffs;
  /** One playback clock for every call here. */
  private readonly pacer = new Pacer();

  constructor(private readonly deps: VoiceServiceDeps) {
    this.idempotency = new IdempotencyKeys(deps.store, deps.now);
    this.handoffs = new Handoffs(deps.store, deps.now);
  }

  async init(): Promise<void> {
    await Promise.all([this.idempotency.init(), this.handoffs.init(), this.deps.transcripts.init()]); // their indexes
    await this.deps.recordings?.init();
    this.deps.recordings?.start();
  }

  /** The calls' recordings (the recording routes read and delete them); undefined when not configured. */
  get recordings(): CallRecordings | undefined {
    return this.deps.recordings;
  }

  /** A one-time token for the call's media stream (checked on its `start` frame). */
  streamToken(callId: string): string {
    return createHmac('sha256', this.deps.keySecret).update(`voice-stream:${callId}`).digest('base64url');
  }

  /** The live side of a call held here (the media stream edge attaches to it), or undefined. */
  media(callId: string): CallMedia | undefined {
    return this.live.get(callId);
  }

  async create(
    principal: ApiKeyPrincipal,
    body: VoiceCallBody,
    idempotencyKey: string | undefined,
    requestId: string,
  ): Promise<{ created: boolean; call: VoiceCallObject }> {
    const payer = await this.deps.payerFor(principal);
    const callId = newCallId();
    if (idempotencyKey !== undefined) {
      const claim = await this.idempotency.claim(payer.walletId, idempotencyKey, body, callId);
      if (!claim.fresh) return { created: false, call: await this.placedBy(payer.walletId, claim.callId) };
      try {
        return { created: true, call: await this.serialized(payer.walletId, () => this.place(principal, payer, body, callId, requestId)) };
      } catch (err) {
        await claim.release().catch(() => undefined);
        throw err;
      }
    }
    return { created: true, call: await this.serialized(payer.walletId, () => this.place(principal, payer, body, callId, requestId)) };
  }

  /**
   * The call an earlier request with the same key placed; that request may still be placing it
   * (racing requests): waits for it a few seconds, then answers 409 conflict (retry).
   */
  private async placedBy(account: string, callId: string): Promise<VoiceCallObject> {
    const deadline = this.deps.now() + IDEMPOTENT_WAIT_MS;
    for (;;) {
      try {
        return await this.get(account, callId);
      } catch (err) {
        if (!(err instanceof ApiError) || err.code !== 'not_found') throw err;
        if (this.deps.now() >= deadline)
          throw new ApiError('conflict', 'A request with this Idempotency-Key is still placing its call; retry.', { headers: { 'retry-after': '1' } });
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** Runs `work` after the account's creations in flight (so each counts the calls before it). */
  private async serialized<T>(account: string, work: () => Promise<T>): Promise<T> {
    const before = this.creating.get(account) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(work);
    this.creating.set(account, mine);
    try {
      return await mine;
    } finally {
      if (this.creating.get(account) === mine) this.creating.delete(account);
    }
  }

  /** GET /v1/voice/concurrency: the account's calls not ended (counted as a POST counts them) and its limit. */
  async concurrency(account: string): Promise<{ in_progress: number; limit: number }> {
    const limit = (await this.deps.maxConcurrentCalls(account)) ?? this.deps.settings.maxConcurrentCalls;
    const active = await this.deps.runtime.list(VOICE_KIND, { account, active: true }, { limit: Math.max(limit, 1000) });
    return { in_progress: active.length, limit };
  }

  /** A cold transfer of the account's call in progress to `to` (src/voice/transfer.ts); answers the call as it stands. */
  async transfer(account: string, id: string, to: string): Promise<VoiceCallObject> {
    const view = await this.view(account, id);
    const deps = { ...this.deps, canTransfer: (callId: string) => this.live.get(callId)?.canTransfer };
    await requestTransfer(deps, view, to);
    return this.get(account, id);
  }

  /** Keys the agent sends on the account's call in progress (src/voice/dtmf.ts), live on this instance; answers the call as it stands. */
  async dtmf(account: string, id: string, digits: string): Promise<VoiceCallObject> {
    const view = await this.view(account, id);
    const status = view.status === 'active' ? facts(view)!.status : 'over';
    if (status !== 'in_progress' || !this.live.get(id)?.sendKeys(digits)) {
      throw new ApiError(
        'call_not_active',
        `The call is ${status === 'in_progress' ? 'not taking keys (being transferred or ending)' : status}: keys go to a call in progress.`,
        {
          param: 'id',
        },
      );
    }
    return this.get(account, id);
  }

  /**
   * An inbound call (src/voice/inbound.ts): placed as any call, billed to `payer` (the number's
   * owner), its carrier's call adopted rather than dialled; the same refusals (the account's
   * concurrent calls, the wallet's floor) throw before anything is held.
   */
  async answerInbound(principal: ApiKeyPrincipal, payer: Payer, body: VoiceCallBody, leg: InboundLeg): Promise<{ callId: string; token: string }> {
    const callId = newCallId();
    await this.serialized(payer.walletId, () => this.place(principal, payer, body, callId, callId, leg));
    return { callId, token: this.streamToken(callId) };
  }

  private async place(
    principal: ApiKeyPrincipal,
    payer: Payer,
    body: VoiceCallBody,
    callId: string,
    requestId: string,
    leg?: InboundLeg,
  ): Promise<VoiceCallObject> {
    const limit = (await this.deps.maxConcurrentCalls(payer.walletId)) ?? this.deps.settings.maxConcurrentCalls;
    const active = await this.deps.runtime.list(VOICE_KIND, { account: payer.walletId, active: true }, { limit });
    if (active.length >= limit) {
      throw new ApiError('concurrency_limit_exceeded', `Your account has ${active.length} calls in progress, its limit; place this one when one ends.`, {
        headers: { 'retry-after': '30' },
      });
    }
    const call = await this.deps.meter.begin(principal, {
      payer, // read once by create, for the idempotency key's wallet
      model: body.model,
      type: 'voice',
      requestId: callId,
      check: async (model, p) => {
        const c = await check(this.deps, model, p, body, leg !== undefined);
        if (!leg) return c;
        const carriers = adoptedCarriers(c.carriers, leg);
        if (carriers.length === 0) throw new ApiError('model_unavailable', `The model '${model._id}' cannot take calls through that route now.`);
        return { ...c, carriers };
      },
      estimate: (_model, c) => c.price * c.reservedSeconds,
      holdTtlMs: HOLD_TTL_MS,
      custodial: true,
    });
    const c = call.checked;
    const now = this.deps.now();
    const ringTimeoutMs = leg?.ringTimeoutMs ?? (body.ring_timeout_seconds ?? DEFAULT_RING_TIMEOUT_SECONDS) * 1000;
    const spec: CallSpecFields = {
      payer: call.payer,
      hold: call.hold,
      requestId: callId,
      startedAt: now,
      pricePerMinuteCents: voiceFeatures(call.model).price_per_minute_cents,
      language: c.language,
      voice: c.voice,
      ...(body.webhook_id !== undefined ? { webhookId: body.webhook_id } : {}),
      ...analysisSpec(c),
    };
    const input: VoiceCallInput<CallSpecFields> = {
      callId,
      account: payer.walletId,
      model: call.model._id,
      to: c.to,
      from: body.from ?? null,
      createdAt: now,
      maxDurationMs: c.reservedSeconds * 1000,
      creditLimited: c.reservedSeconds < c.maxSeconds,
      ringTimeoutMs,
      spec,
      metadata: body.metadata ?? {},
      ...(leg ? { direction: 'inbound' as const } : {}),
      ...(c.analysis ? { analyze: true } : {}),
    };
    const recorder =
      (body.record ?? call.model.record) && this.deps.recordings
        ? await this.deps.recordings
            .begin({ callId, account: payer.walletId, model: call.model._id, modelRetentionDays: call.model.recording_retention_days })
            .catch(async (err: unknown) => {
              await call.release('error', { seconds: 0 }).catch(() => undefined); // the hold is not left behind
              throw err;
            })
        : null;
    const media = callMedia(this.deps, {
      recorder,
      callId,
      account: payer.walletId,
      owner: { type: call.payer.ownerType, id: call.payer.ownerId },
      model: call.model._id,
      webhookId: body.webhook_id,
      metadata: body.metadata ?? {},
      body,
      plan: c,
      endpointingMs: endpointing(body),
      token: this.streamToken(callId),
      pacer: this.pacer,
      onDisposed: () => this.live.delete(callId),
      onHandoff: (carrierCallId, to, from) => this.handoffs.record(carrierCallId, { to, from }),
    });
    this.live.set(callId, media);
    try {
      await this.deps.runtime.spawn(VOICE_KIND, callId, input, { resources: media });
    } catch (err) {
      this.live.delete(callId);
      await this.deps.recordings?.abandon(callId).catch(() => undefined);
      await call.release('error', { seconds: 0 }).catch(() => undefined);
      throw err;
    }
    this.deps.logger.info({ call_id: callId, request_id: requestId, model: call.model._id, reserved_seconds: c.reservedSeconds }, 'voice call placed');
    return {
      id: callId,
      object: 'voice.call',
      status: 'queued',
      model: call.model._id,
      to: c.to,
      from: body.from ?? null,
      direction: leg ? 'inbound' : 'outbound',
      created_at: Math.floor(now / 1000),
      max_duration_seconds: c.reservedSeconds,
      metadata: body.metadata ?? {},
    };
  }

  async get(account: string, id: string): Promise<VoiceCallObject> {
    const view = await this.view(account, id);
    const recording = (await this.deps.recordings?.view(account, id)) ?? null;
    return { ...toObject(view, await this.deps.transcripts.of(account, id)), recording };
  }

  async list(
    account: string,
    opts: CallListFilter & { limit: number; after?: string },
  ): Promise<{ object: 'list'; data: VoiceCallObject[]; has_more: boolean; first_id: string | null; last_id: string | null }> {
    const where = listFilter(account, opts);
    if (opts.after) {
      const cursor = await this.view(account, opts.after).catch(() => {
        throw new ApiError('invalid_request', `Unknown call '${echo(opts.after)}' in 'after'.`, { param: 'after' });
      });
      const c = facts(cursor)!;
      where.order = { $lt: orderKey(c.createdAt, c.callId) };
    }
    const rows = await this.deps.runtime.list(VOICE_KIND, where, { sort: { order: -1 }, limit: opts.limit + 1 });
    const data = await Promise.all(rows.slice(0, opts.limit).map((r) => this.get(account, r.id)));
    return { object: 'list', data, has_more: rows.length > opts.limit, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  }

  /** Cancels a call not answered yet (billed 0), or hangs up one in progress; 409 call_not_active otherwise. */
  async control(account: string, id: string, what: 'cancel' | 'hangup'): Promise<VoiceCallObject> {
    const view = await this.view(account, id);
    const hint =
      what === 'cancel'
        ? 'only a call not answered yet can be cancelled (hang up one in progress)'
        : 'only a call in progress can be hung up (cancel one not answered yet)';
    const refused = (status: string) => new ApiError('call_not_active', `The call is ${status}: ${hint}.`, { param: 'id' });
    // An ended call's actor is final: it takes no more events.
    if (view.status !== 'active') throw refused(facts(view)?.status ?? 'over');
    const { reply } = await this.deps.runtime
      .ref(this.deps.kind, id)
      .ask<ControlReply>({ type: what === 'cancel' ? 'api.cancel' : 'api.hangup', now: this.deps.now() }, { wait: 'durable' })
      .catch(async (err: unknown) => {
        const now = await this.deps.runtime
          .ref(this.deps.kind, id)
          .get()
          .catch(() => null);
        if (now && now.status !== 'active') throw refused(facts(now)?.status ?? 'over'); // it ended meanwhile
        throw err;
      });
    if (!reply.ok) throw refused(reply.status);
    return this.get(account, id);
  }

  /**
   * A carrier's status callback for call `id` (a form, JSON or multipart fields): believed only when one of the call's
   * model's routes of that carrier says it sent it (Twilio: its signature with the route's auth
   * token, over the public URL it was sent to; Exotel: the call's secret in the URL), else 403 and
   * nothing changes. Its news goes to the call's actor through the runtime (whichever instance
   * holds it); callbacks that come late, out of order or twice are news the machine no longer
   * takes in its state, so they change nothing (the stream's start may have answered the call
   * already: src/voice/media.ts). A `completed` with a duration for a call not seen answered tells
   * the answer first; its duration bounds what the call is billed.
   */
  async carrierCallback(
    id: string,
    provider: string,
    sent: Pick<CallbackRequest, 'params' | 'signature' | 'token' | 'encoding'>,
    path: string,
  ): Promise<{ received: true }> {
    const notFound = () => new ApiError('not_found', 'No such call.');
    if (!CALL_ID.test(id)) throw notFound();
    const view = await this.deps.runtime
      .ref(this.deps.kind, id)
      .get()
      .catch(() => null);
    const c = view ? facts(view) : null;
    if (!view || !c) throw notFound();
    const model = await this.deps.models.get(c.model);
    const request: CallbackRequest = { ...sent, callId: id, url: `${this.deps.baseUrl().replace(/\/+$/, '')}${path}` };
    const senders = (model ? this.deps.resolveRoutes(model) : []).flatMap((r, at) => {
      const callbacks = r.provider === provider && !r.problem ? this.deps.carrier(model!.routes[at]!, r)?.callbacks : undefined;
      return callbacks ? [callbacks] : [];
    });
    if (senders.length === 0) throw notFound(); // no route of that carrier sends callbacks: not its call
    const callbacks = senders.find((cb) => cb.authentic(request));
    if (!callbacks) throw new ApiError('permission_denied', 'The callback is not authenticated (its signature or its secret).');
    if (view.status !== 'active') return { received: true };
    const news = callbacks.news(new Map(request.params));
    const ref = this.deps.runtime.ref(this.deps.kind, id);
    const now = this.deps.now();
    const send = (event: Parameters<typeof ref.send>[0]) => ref.send(event, { wait: 'accepted' });
    if (news.kind === 'ringing') await send({ type: 'carrier.ringing', now });
    else if (news.kind === 'answered') await send({ type: 'carrier.answered', now });
    else if (news.kind === 'answered_by') {
      // Twilio's AMD decides after the answer: a decision before its news means the call was answered.
      if (c.answeredAt === null) await send({ type: 'carrier.answered', now });
      const { kind: _kind, ...decided } = news;
      await send({ type: 'answered_by', now, ...decided, source: 'twilio' });
    } else if (news.kind === 'ended') {
      if (news.durationS > 0 && c.answeredAt === null) await send({ type: 'carrier.answered', now: now - news.durationS * 1000 });
      await send({ type: 'carrier.ended', now, ...news.outcome, ...(news.durationS > 0 ? { seconds: news.durationS } : {}) });
    }
    return { received: true };
  }

  private async view(account: string, id: string): Promise<ActorView> {
    const notFound = () => new ApiError('not_found', `No call '${echo(id)}'.`, { param: 'id' });
    if (!CALL_ID.test(id)) throw notFound();
    const view = await this.deps.runtime
      .ref(this.deps.kind, id)
      .get()
      .catch(() => null);
    if (!view || facts(view)?.account !== account) throw notFound();
    return view;
  }

  /**
   * Shutdown: the live calls end (gateway_restart) and their actors bill what was answered; waits
   * for them up to `waitMs` (a call still finishing then is finished by the next start: its actor is
   * restored in `ending` and its once-only steps complete).
   */
  async close(waitMs = 5_000): Promise<void> {
    this.deps.recordings?.close();
    await Promise.all(
      [...this.live.keys()].map((id) =>
        this.deps.runtime
          .ref(this.deps.kind, id)
          .send({ type: 'media.ending', now: this.deps.now(), reason: 'gateway_restart' }, { wait: 'durable' })
          .catch(() => undefined),
      ),
    );
    const deadline = Date.now() + waitMs;
    while (this.live.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await this.deps.toolRequests.close();
  }

  /** The stream URL an Exotel flow's Voicebot applet asks for (src/voice/exotel-flow.ts); null: no call of ours. */
  voicebotStreamUrl(ask: VoicebotAsk): string | null {
    return voicebotStreamUrl({ media: (id) => this.live.get(id), streamToken: (id) => this.streamToken(id), baseUrl: this.deps.baseUrl() }, ask);
  }
}
