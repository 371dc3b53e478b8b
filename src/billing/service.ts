// The billing service: implements the metering boundary the /v1 routes call (src/billing/types.ts)
// and owns billing's lifecycle: its wallets, usage log, top-ups and subscriptions are opened,
// swept, recovered and closed here. The portal's and operators' reads and top-ups, subscriptions
// and KYC are the billing portal's (src/billing/portal.ts), built on this service's parts. Built
// with its store, configuration, event sink and clock; no module state, so two instances on one
// store (two gateway processes) share every limit, wallet and counter through the store alone.
//
// Store operations per metered call: admit = 1 counter write (rpm) + 1 read per token or spend
// limit, each only when the key has that limit; payerFor = 2-3 point reads (the user's membership,
// the organization's owner, the verifier's KYC: asked of identity, src/identity/directory.ts, which
// owns those records); hold = 1 conditional wallet write (the hold recorded in it), after 1-3
// conditional counter writes reserving it when the key has token or spend limits (limits.ts);
// settle = 1 conditional wallet write (the hold removed, the debit, and the usage record in the
// wallet's outbox), then the usage record, rollups and counters written in batches.
//
// After a crash (or at start on the embedded store, whose only owner is this process) what a dead
// instance left is finished at once: its holds returned, its usage batches and outbox entries
// written (instances.ts says how an instance is known dead; usage-recovery.ts what is written).
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { WindowCounters, type Clock } from '../shared/common.ts';
import type { EventSink } from '../shared/events.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';
import type { IdentityDirectory } from '../identity/directory.ts';
import type { AccountWallets, WalletOwner } from '../identity/account-wallets.ts';
import { isDuplicateKeyError, type Collection, type Store } from '../store/port.ts';
import { accountOf, kycVerified, type Account } from './account.ts';
import { CARRY_FOLD_PC, chargeFor, floorCents, MICROCENTS_PER_CENT, ownerField, walletIdOf, walletTotalUc, type WalletDoc } from './money.ts';
import { RateLimits } from './limits.ts';
import { Subscriptions } from './subscriptions.ts';
import { Topups } from './topups.ts';
import type { Billing, Hold, HoldOptions, Payer, UsageFacts } from './types.ts';
import { InstanceLeases } from './instances.ts';
import { encodeEntry } from './usage-entry.ts';
import { STALE_ENTRY_MS, UsageRecovery } from './usage-recovery.ts';
import { UsageLog, type UsageRecordDoc } from './usage.ts';
import { Wallets, type SweepMarks } from './wallets.ts';

export type BillingConfig = Config['billing'];

export interface BillingDeps {
  store: Store;
  /** People: memberships (who pays), organizations' owners and KYC. Identity owns them. */
  identity: IdentityDirectory;
  config: BillingConfig;
  events: EventSink;
  now: Clock;
  /** Told about background failures (usage writes, sweeps, events); they never fail a request. */
  onError?: (err: unknown, what: string) => void;
  /** Told about each batch of usage records as it is flushed (the usage_spike detector). */
  onUsageRecords?: (records: readonly UsageRecordDoc[]) => void;
  /** This process's name (the gateway's instance id), kept on its lease for operators. */
  instance?: string;
  /**
   * The store has one owner and it is this process (the embedded store): at start, every hold,
   * usage batch and outbox entry left by another instance is a dead one's, finished at once.
   */
  soleOwner?: boolean;
}

const DAY_MS = 86_400_000;

/** 403 kyc_required when the model needs verification and the payer's account is not verified. */
export function assertKyc(payer: Payer, requiresKyc: boolean): void {
  if (requiresKyc && !payer.kycVerified) {
    throw new ApiError(
      'kyc_required',
      payer.ownerType === 'org'
        ? "This model requires identity verification; your organization's owner has not completed it."
        : 'This model requires identity verification; complete it before calling this model.',
    );
  }
}

export class BillingService implements Billing, AccountWallets {
  readonly wallets: Wallets;
  readonly usage: UsageLog;
  readonly limits: RateLimits;
  readonly topups: Topups;
  readonly subscriptions: Subscriptions;
  private readonly windows: WindowCounters;
  private readonly identity: IdentityDirectory;
  private readonly swept: Collection<{ _id: string; wallet_id: string; amount_uc: number; claimed_at: Date; expires_at: Date }>;
  private readonly events: EventSink;
  private readonly now: Clock;
  private report: (err: unknown, what: string) => void;
  private readonly onError = (err: unknown, what: string): void => this.report(err, what);
  private timers: NodeJS.Timeout[] = [];
  private sweeping: Promise<unknown> | null = null;
  /** Settles issued by settleForAnswer and not finished yet (close() waits for them). */
  private readonly settling = new Set<Promise<void>>();
  private renewing: Promise<unknown> | null = null;
  private readonly leases: InstanceLeases;
  private readonly recovery: UsageRecovery;

  constructor(private readonly deps: BillingDeps) {
    const { store, config, now } = deps;
    this.now = now;
    this.events = deps.events;
    this.identity = deps.identity;
    this.report = deps.onError ?? (() => {});
    const tag = randomBytes(4).toString('hex');
    this.leases = new InstanceLeases(store, now, tag, deps.instance ?? tag, config.instanceLeaseSeconds * 1000);
    this.windows = new WindowCounters(store.collection('rate_windows'), now);
    this.wallets = new Wallets(store, now, config.holdTtlSeconds * 1000, tag, config.durableWalletWrites);
    const outbox = {
      pull: (walletId: string, entries: string[]) => this.wallets.pullUsage(walletId, entries),
      pending: (after: string, limit: number) => this.wallets.usagePending(after, limit),
    };
    this.usage = new UsageLog(
      store,
      now,
      this.windows,
      outbox,
      tag,
      {
        flushIntervalMs: config.usageFlushIntervalMs,
        flushMaxRecords: config.usageFlushMaxRecords,
        maxBuffered: config.usageMaxBuffered,
        ...(deps.onUsageRecords ? { onRecords: deps.onUsageRecords } : {}),
      },
      this.onError,
    );
    this.recovery = new UsageRecovery(this.usage, store.collection('usage_batches'), outbox, this.onError);
    this.limits = new RateLimits(
      store,
      this.windows,
      deps.events,
      now,
      async (p) => {
        const acc = await this.accountOf(p.userId);
        return { type: acc.ownerType, id: acc.ownerId };
      },
      this.onError,
    );
    this.topups = new Topups(store, this.wallets, deps.events, now, this.onError);
    this.subscriptions = new Subscriptions(store, this.topups, config.plans, now, this.onError);
    this.swept = store.collection('swept_holds');
  }

  async init(): Promise<void> {
    await this.windows.init();
    await this.wallets.init();
    await this.usage.init();
    await this.topups.init();
    await this.subscriptions.init();
    await this.swept.createIndex({ keys: { expires_at: 1 }, expireAfterSeconds: 0 });
    await this.leases.init();
  }

  /**
   * Finishes what dead instances left (see the top of this file): their holds returned, their usage
   * written. Called at start, before serving; on a store this process alone owns, every other
   * instance is then dead.
   */
  async recoverDead(): Promise<{ holds: number; records: number }> {
    if (this.deps.soleOwner) await this.leases.forgetOthers();
    const holds = await this.sweepHolds();
    const records = await this.recoverUsage(this.deps.soleOwner ? Infinity : this.now() - STALE_ENTRY_MS);
    return { holds, records };
  }

  /** Writes the usage left by dead instances: their cut-short batches, and outbox entries made at or before `cutoffMs`. */
  async recoverUsage(cutoffMs = this.now() - STALE_ENTRY_MS): Promise<number> {
    try {
      const dead = await this.leases.deadTest();
      return (await this.recovery.run((tag) => dead(tag), cutoffMs)).records;
    } catch (err) {
      this.onError(err, 'usage recovery failed');
      return 0;
    }
  }

  /** Starts the usage flush, the hold and top-up sweep and the subscription renewal sweep. */
  start(onError?: (err: unknown, what: string) => void): void {
    if (onError) this.report = onError;
    if (this.timers.length > 0) return;
    this.usage.start();
    const { sweepIntervalMs, renewalIntervalMs, instanceLeaseSeconds } = this.deps.config;
    this.timers.push(
      setInterval(() => {
        this.sweeping ??= this.sweepHolds()
          .then(() => this.recoverUsage())
          .finally(() => (this.sweeping = null));
      }, sweepIntervalMs),
      setInterval(() => void this.leases.renew().catch((err: unknown) => this.onError(err, 'billing lease renewal failed')), (instanceLeaseSeconds * 1000) / 3),
      setInterval(() => {
        this.renewing ??= this.renewSubscriptions().finally(() => (this.renewing = null));
      }, renewalIntervalMs),
    );
    for (const t of this.timers) t.unref();
  }

  /** Stops the sweeps and writes every buffered usage record. Call after the HTTP server drained. */
  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await Promise.all([this.sweeping, this.renewing, ...this.settling]);
    await this.usage.close();
    await this.leases.release().catch((err: unknown) => this.onError(err, 'billing lease release failed'));
  }

  /** Writes the buffered usage records now (otherwise they trail by at most one flush interval). */
  flush(): Promise<void> {
    return this.usage.flush();
  }

  /**
   * One sweep: holds returned when expired or when their instance is known dead (one pass over the
   * wallets with money held), crashed top-ups finished.
   */
  async sweepHolds(): Promise<number> {
    let total = 0;
    try {
      for (let done = false; !done; ) {
        const page = await this.wallets.sweep(this.sweptMarks, () => this.leases.deadTest());
        total += page.returned;
        done = page.done;
      }
      await this.topups.recover();
    } catch (err) {
      this.onError(err, 'hold sweep failed');
    }
    return total;
  }

  async renewSubscriptions(): Promise<number> {
    try {
      return await this.subscriptions.sweep();
    } catch (err) {
      this.onError(err, 'subscription renewal sweep failed');
      return 0;
    }
  }

  /**
   * Swept holds are remembered for a week, so a call that outlived its hold is still charged, once.
   * The mark is also the sweep's claim on the hold; a claim older than a minute is a crashed sweep's.
   */
  private readonly sweptMarks: SweepMarks = {
    mark: async (walletId, holdId, amount) => {
      const nowMs = this.now();
      try {
        await this.swept.insertOne({
          _id: holdId,
          wallet_id: walletId,
          amount_uc: amount,
          claimed_at: new Date(nowMs),
          expires_at: new Date(nowMs + 7 * DAY_MS),
        });
        return true;
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
        const claim = await this.swept.findOne({ _id: holdId });
        return !claim || claim.claimed_at.getTime() < nowMs - 60_000;
      }
    },
    unmark: async (holdId) => {
      await this.swept.deleteOne({ _id: holdId });
    },
  };

  // ---- the metering boundary ----

  async payerFor(principal: ApiKeyPrincipal): Promise<Payer> {
    const acc = await this.accountOf(principal.userId);
    return {
      walletId: acc.walletId,
      ownerType: acc.ownerType,
      ownerId: acc.ownerId,
      userId: principal.userId,
      keyId: principal.keyId,
      keyPrefix: principal.prefix,
      kycVerified: await kycVerified(this.identity, acc, principal.userId),
      ...(principal.tpd !== null || principal.cpd !== null || principal.cpm !== null
        ? { caps: { tpd: principal.tpd, cpd: principal.cpd, cpm: principal.cpm } }
        : {}),
    };
  }

  /** The account a user's calls are paid from: their organization's while they belong to one (account.ts). */
  accountOf(userId: number): Promise<Account> {
    return accountOf(this.identity, userId);
  }

  assertKyc(payer: Payer, requiresKyc: boolean): void {
    assertKyc(payer, requiresKyc);
  }

  /** Per-key limits: refuses with 429, or admits and returns the key's standing as headers. */
  admit(principal: ApiKeyPrincipal): Promise<Record<string, string> | null> {
    return this.limits.admit(principal);
  }

  async hold(payer: Payer, microcents: number, requestId: string, opts: HoldOptions = {}): Promise<Hold> {
    if (!Number.isFinite(microcents) || microcents < 0) throw new RangeError(`a hold must be a finite, non-negative number of micro-cents, got ${microcents}`);
    // At least 1 µ¢: an empty wallet pays for nothing, not even a call estimated at zero.
    const amount = Math.max(1, Math.ceil(microcents));
    // Fail closed: a store whose writes do not commit (a full disk) could not record what the call costs.
    if (this.deps.store.failing?.())
      throw new ApiError(
        'store_unavailable',
        'The gateway cannot record usage right now (its store refuses writes); nothing was charged. Retry after a short wait.',
      );
    // The key's windows first (limits before money), given back if the wallet refuses.
    const at = this.now();
    const reserved = await this.limits.reserve(payer, opts.tokens ?? 0, amount, at);
    const id = await this.wallets.hold(payer.walletId, amount, requestId, opts).catch(async (err: unknown) => {
      await this.limits.unreserve(reserved, at);
      throw err;
    });
    if (id === null) {
      await this.limits.unreserve(reserved, at);
      const w = await this.wallets.get(payer.walletId);
      const whose = payer.ownerType === 'org' ? "Your organization's wallet" : 'Your wallet';
      throw new ApiError(
        'insufficient_credit',
        `${whose} has ${cents(floorCents(w?.balance_uc ?? 0))} available and this call may cost up to ${cents(Math.ceil(amount / MICROCENTS_PER_CENT))}; top up first.`,
      );
    }
    return { id, walletId: payer.walletId, amountMicrocents: amount, at, ...(reserved ? { reserved } : {}) };
  }

  settle(hold: Hold, payer: Payer, facts: UsageFacts): Promise<void> {
    return this.finish(hold, payer, facts, facts.costMicrocents);
  }

  async settleForAnswer(hold: Hold, payer: Payer, facts: UsageFacts): Promise<void> {
    if (this.deps.config.durableWalletWrites) return this.settle(hold, payer, facts);
    const done = this.settle(hold, payer, facts)
      .catch((err: unknown) => this.onError(err, 'settle failed'))
      .finally(() => this.settling.delete(done));
    this.settling.add(done);
  }

  release(hold: Hold, payer: Payer, facts: UsageFacts): Promise<void> {
    return this.finish(hold, payer, facts, 0);
  }

  async drop(hold: Hold): Promise<void> {
    // Only the write that dropped it gives its reservation back (a repeat finds it finished).
    if (await this.wallets.finish(hold.walletId, hold.id, 0, 0)) await this.limits.unreserve(hold.reserved ?? null, hold.at ?? this.now());
  }

  private async finish(hold: Hold, payer: Payer, facts: UsageFacts, costUc: number): Promise<void> {
    const capped = costUc >= hold.amountMicrocents;
    const { chargeUc, carryPc } = chargeFor(Math.min(costUc, hold.amountMicrocents));
    // The usage record goes into the wallet with the debit (see billing/usage.ts).
    const record = this.record(hold, payer, facts);
    let entry = '';
    const entryFor = (charged: number): string => {
      record.cost_uc = capped || charged !== chargeUc ? charged : Math.round(costUc);
      return (entry = encodeEntry(record));
    };
    entryFor(chargeUc);
    let charged = chargeUc;
    let wallet = await this.wallets.finish(hold.walletId, hold.id, chargeUc, carryPc, entry);
    if (!wallet) {
      // Already settled or released (a repeat: nothing to do), or swept after its TTL while the call
      // was still running: then the sweeper's marker is claimed once and the cost charged without a
      // hold, as far as the spendable balance goes.
      const swept = await this.swept.findOneAndDelete({ _id: hold.id });
      if (!swept) return;
      const debit = await this.wallets.debitAvailable(hold.walletId, chargeUc, entryFor);
      if (!debit.wallet) {
        this.onError(new Error(`late settle of ${hold.id} on ${hold.walletId} was not written (wallet missing or too busy)`), 'settle failed');
        return;
      }
      charged = debit.taken;
      wallet = debit.wallet;
    }
    if (charged > 0) {
      await this.lowBalance(wallet, charged);
      if ((wallet.carry_pc ?? 0) >= CARRY_FOLD_PC) void this.wallets.foldCarry(wallet).catch((err: unknown) => this.onError(err, 'carry fold failed'));
    }
    this.usage.add(record, entry);
  }

  /** A call's usage record (its cost is set by finish). */
  private record(hold: Hold, payer: Payer, facts: UsageFacts): UsageRecordDoc {
    const ts = this.now();
    const record: UsageRecordDoc = {
      _id: this.usage.newId(ts),
      ts: new Date(ts),
      request_id: facts.requestId,
      owner: hold.walletId,
      owner_type: payer.ownerType,
      owner_id: payer.ownerId,
      user_id: payer.userId,
      key_id: payer.keyId,
      key_prefix: payer.keyPrefix,
      model: facts.model,
      model_type: facts.modelType,
      route: facts.route,
      cost_uc: 0,
      status: facts.status,
      latency_ms: Math.max(0, Math.round(facts.latencyMs)),
      // The usage facts a call may give fill their record fields only when it gives them.
      ...(facts.promptTokens !== undefined ? { prompt_tokens: facts.promptTokens } : {}),
      ...(facts.completionTokens !== undefined ? { completion_tokens: facts.completionTokens } : {}),
      ...(facts.cachedTokens !== undefined ? { cached_tokens: facts.cachedTokens } : {}),
      ...(facts.seconds !== undefined ? { seconds: facts.seconds } : {}),
      ...(facts.characters !== undefined ? { characters: facts.characters } : {}),
      ...(facts.calls !== undefined ? { calls: facts.calls } : {}),
      ...(facts.endUser !== undefined ? { end_user: facts.endUser } : {}),
      // The key's windows it counts in (those of its hold), and what the hold reserved there.
      ...(hold.at !== undefined ? { held_at: hold.at } : {}),
      ...(hold.reserved ? { reserved_tokens: hold.reserved.tokens, reserved_uc: hold.reserved.uc } : {}),
    };
    return record;
  }

  /** low_balance once per crossing: the one write that took the balance from ≥ threshold to below it. */
  private async lowBalance(w: WalletDoc, charged: number): Promise<void> {
    const threshold = w.low_balance_threshold_cents ?? 0;
    if (threshold <= 0) return;
    const after = w.balance_uc + w.held_uc;
    const limit = threshold * MICROCENTS_PER_CENT;
    if (after >= limit || after + charged < limit) return;
    await this.events
      .emit({
        event: 'low_balance',
        owner: { type: w.owner_type, id: w.owner_id },
        fields: { ...ownerField(w.owner_type, w.owner_id), balance_cents: floorCents(walletTotalUc(w)), threshold_cents: threshold },
      })
      .catch((err: unknown) => this.onError(err, 'low_balance event failed'));
  }

  // ---- wallets of accounts (AccountWallets: identity opens and closes them through billing) ----

  openWallet(owner: WalletOwner, at: Date): Promise<void> {
    return this.wallets.ensure(walletIdOf(owner.type, owner.id), owner.type, owner.id, at);
  }

  async walletCents(owner: WalletOwner): Promise<number> {
    return floorCents(walletTotalUc(await this.wallets.get(walletIdOf(owner.type, owner.id))));
  }

  /** What a wallet can still hold (its balance less what calls in flight hold), µ¢. */
  async availableMicrocents(walletId: string): Promise<number> {
    return (await this.wallets.get(walletId))?.balance_uc ?? 0;
  }

  closeWallet(owner: WalletOwner): Promise<void> {
    return this.wallets.close(walletIdOf(owner.type, owner.id));
  }
}

const cents = (n: number): string => `${n} cent${n === 1 ? '' : 's'}`;
