// Wallet operations. Money moves by atomic writes on the wallet document, and the holds in flight
// live in it too (`holds`: a list of `<id> <µ¢> <expiry> <request>` strings), so every step is one single-document write
// that MongoDB and the embedded store both apply atomically, and `held_uc` always equals the sum of
// `holds` (no reconciler, no half-done hold after a crash):
// - hold: reserve the estimate if the spendable balance covers it and record the hold, one
//   conditional write;
// - finish (settle or release): remove the hold if it is still there, debit the charge and give back
//   the rest, one conditional write: it decides, once, who finishes the hold;
// - sweep: holds past their expiry (the call outlived them), or whose instance is known dead, are
//   returned.
// Both are lazy writes (`j: false`): acknowledged once applied, so a call waits for no disk flush
// (on the embedded store they are applied in memory at once and the wallet is written once per
// batch: see store/embedded/overlay.ts).
// Every later write and read sees them (a read of the wallet, the portal's included, waits for their
// commit, so what anyone is shown is on disk), and they reach the disk with a group commit within
// about 2 ms plus that commit (the embedded store waits 2 ms for a settle to join its hold's write;
// add the commit ahead while the disk is busy). A crash in that window loses the last holds and
// debits together, each debit with its usage record (the settle writes it into `usage_outbox`, see
// billing/usage.ts): in the client's favour (a call uncharged, never a charge without its call, nor a
// record without its debit). A hold that reached the disk without its settle is returned at once when
// its instance is known dead (instances.ts), else by the sweep after it expires.
// (`billing.durableWalletWrites: true` makes finishes wait for their fsync instead. Holds stay lazy
// even then: a hold is never shown to the client, a crash that loses one also ends its call unanswered,
// and the finish's commit carries it to disk, so one fsync per call is enough.)
// The cost is a wallet document that grows by about 90 bytes per call in flight on it. (Strings in a
// list, not a map keyed by hold id nor a list of objects: msgpack, the embedded store's encoding,
// describes each new set of keys anew, and writes objects several times slower than strings.)
import { randomUUID } from 'node:crypto';
import type { Clock } from '../shared/common.ts';
import type { Collection, Store, WriteOptions } from '../store/port.ts';
import { ApiError } from '../errors.ts';
import {
  CARRY_FOLD_PC,
  PICOCENTS_PER_MICROCENT,
  WALLET_LIMIT_CENTS,
  WALLET_LIMIT_UC,
  floorCents,
  holdToken,
  parseHold,
  walletSeed,
  walletTotalUc,
  type OwnerType,
  type WalletDoc,
} from './money.ts';

const MIGRATION_ID = 'wallets_microcents';
/** Acknowledged once applied; on disk with the next group commit (see above). */
const LAZY: WriteOptions = { writeConcern: { j: false } };
/** Wallets looked at per sweep page (those with money held). */
const SWEEP_PAGE = 500;
/** What a finish's caller reads of the wallet: not its lists, which can be long on a busy wallet. */
const WITHOUT_LISTS = { holds: 0, usage_outbox: 0, applied_topups: 0 } as const;

/** The update that appends a usage entry to the outbox and marks it pending (nothing without one). */
function outboxPush(entry: string | undefined): Record<string, Record<string, unknown>> {
  return entry === undefined ? {} : { $push: { usage_outbox: entry }, $set: { usage_pending: true } };
}

/** Hold records of versions that kept them in a collection of their own (migrated at start). */
interface LegacyHoldDoc {
  _id: string;
  wallet_id: string;
  amount_uc: number;
  expires_at: Date;
  [k: string]: unknown;
}

/** Where the sweeper records the holds it returns (see BillingService). */
export interface SweepMarks {
  /** Claims a hold for this sweep: false when another sweep claimed it (and is returning it). */
  mark(walletId: string, holdId: string, amount: number): Promise<boolean>;
  unmark(holdId: string): Promise<void>;
}

export class Wallets {
  readonly docs: Collection<WalletDoc>;
  /** Where the next sweep page starts (by wallet id), so every wallet gets its turn. */
  private sweepFrom = '';

  /** The write options of finishes (settle, release; see above). Holds are always lazy. */
  private readonly finishWrites: WriteOptions;

  constructor(
    private readonly store: Store,
    private readonly now: Clock,
    private readonly holdTtlMs: number,
    /** This instance's tag (instances.ts), written into its holds. */
    private readonly owner: string,
    durableCallWrites = false,
  ) {
    this.docs = store.collection<WalletDoc>('wallets');
    this.finishWrites = durableCallWrites ? {} : LAZY;
  }

  async init(): Promise<void> {
    await this.docs.createIndex({ keys: { held_uc: 1 } });
    await this.docs.createIndex({ keys: { usage_pending: 1 }, sparse: true });
    await this.migrate();
    await this.adoptLegacyHolds();
  }

  /**
   * Earlier versions kept each hold in a `billing_holds` document (its amount already counted in
   * the wallet's `held_uc`): each is moved into its wallet, then deleted. Setting it only where it
   * is absent makes a repeat after a crash harmless.
   */
  private async adoptLegacyHolds(): Promise<void> {
    const legacy = this.store.collection<LegacyHoldDoc>('billing_holds');
    for (;;) {
      const batch = await legacy.find({}, { limit: 500 });
      if (batch.length === 0) return;
      for (const h of batch) {
        const token = holdToken({ id: h._id, a: h.amount_uc, x: h.expires_at.getTime(), r: typeof h.request_id === 'string' ? h.request_id : '-' });
        await this.docs.updateOne({ _id: h.wallet_id, holds: { $ne: token } }, { $push: { holds: token } });
        await legacy.deleteOne({ _id: h._id });
      }
    }
  }

  /**
   * Wallets written before micro-cents held `balance_cents`: converted once, each by a write
   * conditional on the old value, so two instances starting together convert each wallet once.
   */
  private async migrate(): Promise<void> {
    const marks = this.store.collection<{ _id: string; at: Date }>('migrations');
    if (await marks.findOne({ _id: MIGRATION_ID })) return;
    for (;;) {
      const batch = await this.docs.find({ balance_cents: { $exists: true } }, { limit: 500 });
      if (batch.length === 0) break;
      for (const w of batch) {
        const cents = Number(w.balance_cents) || 0;
        await this.docs.updateOne(
          { _id: w._id, balance_cents: w.balance_cents },
          { $inc: { balance_uc: Math.round(cents * 1_000_000), held_uc: 0 }, $unset: { balance_cents: '' } },
        );
      }
    }
    await marks.updateOne({ _id: MIGRATION_ID }, { $setOnInsert: { at: new Date(this.now()) } }, { upsert: true });
  }

  get(id: string): Promise<WalletDoc | null> {
    return this.docs.findOne({ _id: id });
  }

  /** Creates the wallet if it does not exist yet (wallets are created at sign-up and org creation), as of `at`. */
  async ensure(id: string, ownerType: OwnerType, ownerId: number, at = new Date(this.now())): Promise<void> {
    await this.docs.updateOne({ _id: id }, { $setOnInsert: walletSeed(ownerType, ownerId, at) }, { upsert: true });
  }

  /** Marks the wallet closed (its organization was deleted). */
  async close(id: string): Promise<void> {
    await this.docs.updateOne({ _id: id }, { $set: { closed_at: new Date(this.now()) } });
  }

  /** Reserves `amount` µ¢; resolves to the hold's id (its token), or null when the spendable balance is short. */
  async hold(
    walletId: string,
    amount: number,
    requestId: string,
    opts: { ttlMs?: number; custodial?: boolean; id?: string; expiresAt?: number } = {},
  ): Promise<string | null> {
    // No wallet holds more than WALLET_LIMIT_UC: a larger hold could never be covered (and would not be exact).
    if (!Number.isSafeInteger(amount) || amount > WALLET_LIMIT_UC) return null;
    const named = opts.id !== undefined;
    if (named && !/^[!-~]+$/.test(opts.id!)) throw new RangeError(`a hold id is printable ASCII without spaces, got ${JSON.stringify(opts.id)}`);
    const id = opts.id ?? `h${randomUUID().replaceAll('-', '')}`;
    const expiry = named && opts.expiresAt !== undefined ? Math.round(opts.expiresAt) : this.now() + (opts.ttlMs ?? this.holdTtlMs);
    // A custodial hold (an actor's: a job) carries no instance tag: it outlives the process that took
    // it, since the actor resumes elsewhere and settles it; only its TTL returns it.
    const token = holdToken({ id, a: amount, x: expiry, r: requestId, ...(opts.custodial ? {} : { o: this.owner }) });
    const reserved = await this.docs.updateOne(
      // A named hold is taken once: its token already there (a replay) is not taken again.
      { _id: walletId, balance_uc: { $gte: amount }, ...(named ? { holds: { $ne: token } } : {}) },
      { $inc: { balance_uc: -amount, held_uc: amount }, $push: { holds: token } },
      LAZY,
    );
    if (reserved.modifiedCount === 1) return token;
    if (named && (await this.docs.findOne({ _id: walletId, holds: token }, { projection: { _id: 1 } }))) return token;
    return null;
  }

  /**
   * Ends a hold (by its token): debits `charge` (≤ its amount), returns the rest, credits `carryPc`,
   * and appends the call's usage record (`entry`, usage-entry.ts) to the wallet's outbox in the
   * same write. Resolves to the wallet after the write, or null when the hold was already finished
   * (or swept): the hold's presence decides, once, whether this call is charged and recorded.
   */
  async finish(walletId: string, token: string, charge: number, carryPc: number, entry?: string): Promise<WalletDoc | null> {
    const amount = parseHold(token)?.a;
    if (amount === undefined) return null;
    const inc: Record<string, number> = { balance_uc: amount - Math.min(charge, amount), held_uc: -amount };
    if (carryPc > 0) inc.carry_pc = carryPc;
    return this.docs.findOneAndUpdate(
      { _id: walletId, holds: token },
      { $inc: inc, $pull: { holds: token }, ...outboxPush(entry) },
      { returnDocument: 'after', projection: WITHOUT_LISTS, ...this.finishWrites },
    );
  }

  /**
   * A debit without a hold (a call that outlived its hold): as much of `charge` as the spendable
   * balance allows, never below zero, with the call's usage record (`entryFor(taken)`) in the same
   * write. Resolves to what was taken and the wallet after.
   */
  async debitAvailable(walletId: string, charge: number, entryFor?: (taken: number) => string): Promise<{ taken: number; wallet: WalletDoc | null }> {
    for (let attempt = 0; attempt < 8; attempt++) {
      const w = await this.get(walletId);
      const take = Math.min(charge, w?.balance_uc ?? 0);
      if (!w) return { taken: 0, wallet: w };
      const after = await this.docs.findOneAndUpdate(
        { _id: walletId, balance_uc: w.balance_uc },
        { $inc: { balance_uc: -take }, ...outboxPush(entryFor?.(take)) },
        { returnDocument: 'after', projection: WITHOUT_LISTS },
      );
      if (after) return { taken: take, wallet: after };
    }
    return { taken: 0, wallet: await this.get(walletId) };
  }

  /**
   * Takes written usage entries out of a wallet's outbox, and clears its `usage_pending` mark once
   * the outbox is empty (conditionally, so a settle's entry appended meanwhile keeps it). Lazy: an
   * entry whose removal a crash forgets is found already written by the recovery.
   */
  async pullUsage(walletId: string, entries: string[]): Promise<void> {
    const after =
      entries.length > 0
        ? await this.docs.findOneAndUpdate(
            { _id: walletId },
            { $pull: { usage_outbox: { $in: entries } } },
            { returnDocument: 'after', projection: { usage_outbox: 1, usage_pending: 1 }, ...LAZY },
          )
        : await this.get(walletId);
    if (after?.usage_pending && (after.usage_outbox ?? []).length === 0) {
      await this.docs.updateOne({ _id: walletId, usage_pending: true, 'usage_outbox.0': { $exists: false } }, { $unset: { usage_pending: '' } }, LAZY);
    }
  }

  /** Wallets whose usage outbox may hold entries (for recovery), by `_id` after `after`. */
  usagePending(after: string, limit: number): Promise<WalletDoc[]> {
    return this.docs.find({ usage_pending: true, _id: { $gt: after } }, { sort: { _id: 1 }, limit });
  }

  /**
   * Moves whole 1,000 µ¢ units of carry into the balance (conditional, so concurrent folds never
   * overshoot). Lazy like the settles: a fold a crash forgets leaves the carry where it was, and a
   * durable write would send the busy wallet's hot writes through the write queue while it commits.
   */
  async foldCarry(w: WalletDoc): Promise<void> {
    const units = Math.floor((w.carry_pc ?? 0) / CARRY_FOLD_PC);
    if (units <= 0) return;
    await this.docs.updateOne(
      { _id: w._id, carry_pc: { $gte: units * CARRY_FOLD_PC } },
      { $inc: { carry_pc: -units * CARRY_FOLD_PC, balance_uc: (units * CARRY_FOLD_PC) / PICOCENTS_PER_MICROCENT } },
      LAZY,
    );
  }

  /**
   * Credits `amount` µ¢ once per `creditId`: the wallet remembers its last credits, so re-applying
   * one (a retry after a crash) is a no-op. Resolves to the wallet after, or null if it is missing.
   */
  async credit(walletId: string, creditId: string, amount: number): Promise<WalletDoc | null> {
    if (!Number.isSafeInteger(amount) || amount < 0) throw new RangeError(`a credit must be a safe non-negative integer of micro-cents, got ${amount}`);
    // Conditional on the room left under WALLET_LIMIT_UC, so concurrent credits cannot pass it together.
    const applied = await this.docs.findOneAndUpdate(
      {
        _id: walletId,
        applied_topups: { $ne: creditId },
        $expr: { $lte: [{ $add: [{ $ifNull: ['$balance_uc', 0] }, { $ifNull: ['$held_uc', 0] }] }, WALLET_LIMIT_UC - amount] },
      },
      { $inc: { balance_uc: amount }, $push: { applied_topups: { $each: [creditId], $slice: -64 } } },
      { returnDocument: 'after' },
    );
    if (applied) return applied;
    const w = await this.get(walletId);
    if (!w || w.applied_topups?.includes(creditId)) return w;
    throw walletLimitExceeded(w, amount);
  }

  /** Throws 409 wallet_limit_exceeded when crediting `amount` µ¢ now would take the wallet past WALLET_LIMIT_UC. */
  async assertRoom(walletId: string, amount: number): Promise<void> {
    const w = await this.get(walletId);
    if (w && walletTotalUc(w) + amount > WALLET_LIMIT_UC) throw walletLimitExceeded(w, amount);
  }

  async setThreshold(walletId: string, cents: number): Promise<WalletDoc | null> {
    return this.docs.findOneAndUpdate({ _id: walletId }, { $set: { low_balance_threshold_cents: cents } }, { returnDocument: 'after' });
  }

  /**
   * Returns the expired holds of one page of wallets with money held; resolves to the number
   * returned and whether the pass over all such wallets is complete. Each hold is marked
   * (`marks.mark`, which also keeps two sweeps off one hold) before it is removed, so a call that
   * outlived its hold finds the mark the moment the hold is gone; the mark is taken back when the
   * call finished the hold first.
   */
  async sweep(marks: SweepMarks, deadOwners: () => Promise<(tag: string | undefined) => boolean>): Promise<{ returned: number; done: boolean }> {
    const nowMs = this.now();
    const page = await this.docs.find({ held_uc: { $gt: 0 }, _id: { $gt: this.sweepFrom } }, { sort: { _id: 1 }, limit: SWEEP_PAGE });
    const done = page.length < SWEEP_PAGE;
    this.sweepFrom = done ? '' : page.at(-1)!._id;
    // Read after the page: an owner of a hold on it took its lease before the hold, so it shows.
    const dead = page.length > 0 ? await deadOwners() : () => false;
    let returned = 0;
    for (const w of page) {
      for (const token of w.holds ?? []) {
        const h = parseHold(token);
        if (!h || (h.x > nowMs && !dead(h.o))) continue;
        if (!(await marks.mark(w._id, token, h.a))) continue;
        if (await this.finish(w._id, token, 0, 0)) returned++;
        else await marks.unmark(token);
      }
    }
    return { returned, done };
  }
}

function walletLimitExceeded(w: WalletDoc, amount: number): ApiError {
  return new ApiError(
    'wallet_limit_exceeded',
    `Crediting ${Math.ceil(amount / 1_000_000).toLocaleString('en-US')} cents would take this wallet past its limit of ${WALLET_LIMIT_CENTS.toLocaleString('en-US')} cents (it holds ${floorCents(walletTotalUc(w)).toLocaleString('en-US')} cents).`,
  );
}
