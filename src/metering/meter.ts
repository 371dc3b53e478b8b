// The Meter: the one metered sequence every paid call goes through (chat, embeddings, speech,
// transcription, its jobs, realtime sessions, intent; calls next):
//   begin: payer → model (of the capability's type, active for the payer) → the capability's own
//          checks on the model → KYC → hold the estimate
//   then exactly one of settle (the exact cost) or release (nothing delivered: free).
// A MeteredCall settles or releases once; a second attempt is a no-op, so an error path that runs
// after a settle cannot refund a delivered call, nor a retry charge twice. Prices come from
// billing/pricing.ts; holds are taken, settled, released and dropped here and nowhere else.
//
// An actor's call (a job, a realtime session) outlives the process that began it: the actor keeps
// it as plain JSON (`SavedCall`: payer, model, hold, request id, start) and, after a restore on any
// instance, `Meter.resume` makes it a MeteredCall again. Across processes, exactly once is billing's
// (a hold is settled, released or dropped once, on any instance) together with the actor's once-only
// steps around each money call; the in-memory guard only covers one MeteredCall object.
import { ApiError } from '../errors.ts';
import type { Billing, Hold, HoldOptions, Payer, UsageFacts } from '../billing/types.ts';
import type { ModelCatalog } from '../models/catalog.ts';
import type { ModelDoc, ModelType } from '../models/types.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';

export interface MeterDeps {
  billing: Billing;
  models: ModelCatalog;
  assertKyc(payer: Payer, requiresKyc: boolean): void;
  now(): number;
}

export interface BeginOptions<T> {
  /** The model name the client asked for. */
  model: string;
  type: ModelType;
  requestId: string;
  /**
   * The capability's own rules on the resolved model (a language it offers, a pack it names, a
   * context window): throws the client's error, or returns what the call needs next. Runs before
   * KYC and the hold, so a refused request holds nothing.
   */
  check?: (model: ModelDoc, payer: Payer) => T | Promise<T>;
  /** The most the call can cost, µ¢ (rounded up by billing to whole µ¢, at least 1). */
  estimate: (model: ModelDoc, checked: T) => number;
  /**
   * The most tokens the call can use (prompt and output), reserved with the hold in the key's daily
   * token window when it has a TPD limit; for the calls billed by tokens.
   */
  tokens?: (checked: T) => number;
  /**
   * When `estimate` rests on a cheap upper bound (a prompt's bytes for its tokens): makes `checked`
   * exact and says whether that lowered it. Called only when the wallet (or a key's token or spend
   * window) refuses the first hold, which is then tried once more with the new estimate.
   */
  tighten?: (checked: T) => boolean;
  /** The hold's life when it must outlast the request (a job); default billing's hold TTL. */
  holdTtlMs?: number;
  /** An actor's hold (a job): kept across the death of the process that took it (see HoldOptions). */
  custodial?: boolean;
  /** Who pays, when the caller has already read it for the same principal (a voice call's idempotency). */
  payer?: Payer;
}

/** Every field of T named (a field added to T and not written out is a compile error), undefined allowed. */
type EveryField<T> = { [K in keyof Required<T>]: T[K] | undefined };

/** What a usage record needs beyond what the MeteredCall knows. */
export type CallFacts = Omit<UsageFacts, 'requestId' | 'model' | 'modelType' | 'latencyMs'>;

/** What a call knows of its model: the whole document when begun, its id and type when resumed. */
export type CallModel = Pick<ModelDoc, '_id' | 'type'>;

/**
 * A call in flight as plain JSON, kept by an actor in its spec or context: `Meter.resume` makes it
 * a MeteredCall again, on whichever instance runs the actor.
 */
export interface SavedCall {
  payer: Payer;
  /** The model's id. */
  model: string;
  modelType: ModelType;
  hold: Hold;
  requestId: string;
  /** When the call began (epoch ms): its usage record's latency runs from here. */
  startedAt: number;
}

export class Meter {
  constructor(private readonly deps: MeterDeps) {}

  /** `principal` null: an actor's call for a payer it saved (`opts.payer`: a voice call's analysis), no key in hand. */
  async begin<T = undefined>(principal: ApiKeyPrincipal | null, opts: BeginOptions<T>): Promise<MeteredCall & { checked: T }> {
    const { billing, models } = this.deps;
    if (!principal && !opts.payer) throw new Error('Meter.begin: a principal or a payer');
    const payer = opts.payer ?? (await billing.payerFor(principal!));
    const model = await models.resolve(opts.model, opts.type, payer.walletId);
    const checked = (opts.check ? await opts.check(model, payer) : undefined) as T;
    this.deps.assertKyc(payer, model.requires_kyc === true);
    const holdOptions = {
      ...(opts.holdTtlMs !== undefined ? { ttlMs: opts.holdTtlMs } : {}),
      ...(opts.custodial ? { custodial: true } : {}),
    };
    const take = () =>
      billing.hold(payer, opts.estimate(model, checked), opts.requestId, {
        ...holdOptions,
        ...(opts.tokens ? { tokens: opts.tokens(checked) } : {}),
      });
    let hold: Hold;
    try {
      hold = await take();
    } catch (err) {
      const refused = err instanceof ApiError && (err.code === 'insufficient_credit' || err.code === 'rate_limit_exceeded');
      if (!(refused && opts.tighten?.(checked))) throw err;
      hold = await take();
    }
    return Object.assign(new MeteredCall(billing, payer, model, hold, opts.requestId, this.deps.now(), this.deps.now), { checked });
  }

  /**
   * A saved call (`MeteredCall.saved()`, or the same fields an actor kept) as a MeteredCall again:
   * no store read, so an actor resumes it after a restore, on any instance, for nothing.
   */
  resume(saved: SavedCall): MeteredCall<CallModel> {
    return new MeteredCall(
      this.deps.billing,
      saved.payer,
      { _id: saved.model, type: saved.modelType },
      saved.hold,
      saved.requestId,
      saved.startedAt,
      this.deps.now,
    );
  }
}

export class MeteredCall<M extends CallModel = ModelDoc> {
  private finished = false;

  constructor(
    private readonly billing: Billing,
    readonly payer: Payer,
    readonly model: M,
    readonly hold: Hold,
    readonly requestId: string,
    readonly startedAt: number,
    private readonly now: () => number,
  ) {}

  /** The call as plain JSON, for an actor to keep and `Meter.resume` later. */
  saved(): SavedCall {
    return { payer: this.payer, model: this.model._id, modelType: this.model.type, hold: this.hold, requestId: this.requestId, startedAt: this.startedAt };
  }

  /** The most this call may be charged (the hold), µ¢. */
  get limitMicrocents(): number {
    return this.hold.amountMicrocents;
  }

  /**
   * Charges the exact cost (capped at the hold) and records usage. `answer: true` resolves as soon
   * as the answer may be sent (billing's settleForAnswer: at once with lazy wallet writes).
   */
  async settle(facts: CallFacts, opts: { answer?: boolean } = {}): Promise<void> {
    if (this.finish()) return;
    const full = this.facts(facts);
    await (opts.answer ? this.billing.settleForAnswer(this.hold, this.payer, full) : this.billing.settle(this.hold, this.payer, full));
  }

  /** Returns the whole hold: nothing was delivered, nothing is charged; usage is recorded with cost 0. */
  async release(status: UsageFacts['status'], extra: Partial<CallFacts> = {}): Promise<void> {
    if (this.finish()) return;
    await this.billing.release(this.hold, this.payer, this.facts({ route: null, ...extra, costMicrocents: 0, status }));
  }

  /**
   * A larger hold for this call, in place of its own (a job whose recording decodes longer than its
   * container declared): custodial, named `id`, expiring at `expiresAt`. Taking it again while it is
   * in flight answers the same hold, so a step replayed after a crash never holds twice; once it is
   * finished, taking it again would hold anew, so take it in a once-only step. Returns the covering
   * call, saved: settle or release that one, and `drop` this one (any number of times). Throws
   * ApiError insufficient_credit when the wallet cannot cover it.
   */
  cover(microcents: number, named: { id: string; expiresAt: number }): Promise<SavedCall> {
    return this.custodialHold(microcents, this.requestId, { id: named.id, expiresAt: named.expiresAt });
  }

  /**
   * Another hold for the same call, which is billed in parts each settling its own hold (a realtime
   * session's ticks): custodial, living `ttlMs`, its trace in the wallet `holdRequestId`. Returns the
   * call on the new hold, saved. Throws ApiError insufficient_credit when the wallet cannot cover it.
   */
  holdNext(microcents: number, opts: { holdRequestId: string; ttlMs: number }): Promise<SavedCall> {
    return this.custodialHold(microcents, opts.holdRequestId, { ttlMs: opts.ttlMs });
  }

  /** Another custodial hold on this call's payer, and this call saved on it (cover, holdNext). */
  private async custodialHold(microcents: number, requestId: string, opts: Omit<HoldOptions, 'custodial'>): Promise<SavedCall> {
    const hold = await this.billing.hold(this.payer, microcents, requestId, { ...opts, custodial: true });
    return { ...this.saved(), hold };
  }

  /**
   * Returns this call's whole hold with no usage record, because a covering hold (`cover`) replaced
   * it and is settled or released in its place. A no-op when the hold is already finished.
   */
  async drop(): Promise<void> {
    if (this.finish()) return;
    await this.billing.drop(this.hold);
  }

  /** Whether the call was settled, released or dropped already (then this one is a no-op). */
  private finish(): boolean {
    const was = this.finished;
    this.finished = true;
    return was;
  }

  // Every field written out, in one order, rather than spread from `facts`: one object shape for
  // every call. The spread of objects of many shapes (each capability's facts) was the settle's
  // dearest line, ~9 µs of a chat call's CPU in a profile at 50 connections.
  private facts(facts: CallFacts): UsageFacts {
    return {
      requestId: this.requestId,
      model: this.model._id,
      modelType: this.model.type,
      route: facts.route,
      promptTokens: facts.promptTokens,
      completionTokens: facts.completionTokens,
      seconds: facts.seconds,
      characters: facts.characters,
      calls: facts.calls,
      costMicrocents: facts.costMicrocents,
      status: facts.status,
      latencyMs: this.now() - this.startedAt,
      cachedTokens: facts.cachedTokens,
      endUser: facts.endUser,
    } satisfies EveryField<UsageFacts>;
  }
}
