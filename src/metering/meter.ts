// The Meter: the one metered sequence every paid call goes through, chat, embeddings and intent
// now, speech and calls next:
//   begin: payer → model (of the capability's type, active for the payer) → the capability's own
//          checks on the model → KYC → hold the estimate
//   then exactly one of settle (the exact cost) or release (nothing delivered: free).
// A MeteredCall settles or releases once; a second attempt is a no-op, so an error path that runs
// after a settle cannot refund a delivered call, nor a retry charge twice.
import type { Billing, Hold, Payer, UsageFacts } from '../billing/types.ts';
import type { ModelCatalog } from '../models/catalog.ts';
import type { ModelDoc, ModelType } from '../models/types.ts';
import type { ApiKeyPrincipal } from '../services/keys.ts';

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
  /** The hold's life when it must outlast the request (a job); default billing's hold TTL. */
  holdTtlMs?: number;
  /** An actor's hold (a job): kept across the death of the process that took it (see HoldOptions). */
  custodial?: boolean;
}

/** What a usage record needs beyond what the MeteredCall knows. */
export type CallFacts = Omit<UsageFacts, 'requestId' | 'model' | 'modelType' | 'latencyMs'>;

export class Meter {
  constructor(private readonly deps: MeterDeps) {}

  async begin<T = undefined>(principal: ApiKeyPrincipal, opts: BeginOptions<T>): Promise<MeteredCall & { checked: T }> {
    const { billing, models } = this.deps;
    const payer = await billing.payerFor(principal);
    const model = await models.resolve(opts.model, opts.type, payer.walletId);
    const checked = (opts.check ? await opts.check(model, payer) : undefined) as T;
    this.deps.assertKyc(payer, model.requires_kyc === true);
    const estimate = opts.estimate(model, checked);
    const hold = await billing.hold(payer, estimate, opts.requestId, {
      ...(opts.holdTtlMs !== undefined ? { ttlMs: opts.holdTtlMs } : {}),
      ...(opts.custodial ? { custodial: true } : {}),
    });
    return Object.assign(new MeteredCall(billing, payer, model, hold, opts.requestId, this.deps.now), { checked });
  }
}

export class MeteredCall {
  readonly startedAt: number;
  private finished = false;

  constructor(
    private readonly billing: Billing,
    readonly payer: Payer,
    readonly model: ModelDoc,
    readonly hold: Hold,
    readonly requestId: string,
    private readonly now: () => number,
  ) {
    this.startedAt = now();
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

  /** Whether the call was settled or released already (then this one is a no-op). */
  private finish(): boolean {
    const was = this.finished;
    this.finished = true;
    return was;
  }

  private facts(facts: CallFacts): UsageFacts {
    return { ...facts, requestId: this.requestId, model: this.model._id, modelType: this.model.type, latencyMs: this.now() - this.startedAt };
  }
}
