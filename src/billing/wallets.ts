// Wallet operations. Money moves by atomic `$inc`s on the wallet document; each hold in flight is
// also a document of its own (`billing_holds`, with its expiry), so a wallet document stays small
// however many calls are in flight on it:
// - hold: reserve the estimate if the spendable balance covers it (one conditional write), then
//   record the hold;
// - finish (settle or release): deleting the hold record decides, once, who finishes it; then the
//   wallet is debited the charge and given back the rest;
// - sweep: holds past their expiry (their process died, or the call outlived them) are returned;
// - reconcile: a crash between the two writes of one hold, finish or sweep leaves an amount counted
//   as held with no hold record; once the wallet has been quiet for a while (`seq`, bumped by every
//   hold and finish, unchanged), what is held beyond its hold records is given back.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../services/common.ts';
import type { Collection, Store } from '../store/port.ts';
import { CARRY_FOLD_PC, PICOCENTS_PER_MICROCENT, walletSeed, type OwnerType, type WalletDoc } from './money.ts';

const MIGRATION_ID = 'wallets_microcents';

export interface HoldDoc {
  _id: string;
  wallet_id: string;
  amount_uc: number;
  expires_at: Date;
  request_id: string;
  [k: string]: unknown;
}

/** Where the sweeper records the holds it returns (see BillingService). */
export interface SweepMarks {
  /** Claims a hold for this sweep: false when another sweep claimed it (and is returning it). */
  mark(walletId: string, holdId: string, amount: number): Promise<boolean>;
  unmark(holdId: string): Promise<void>;
}

interface Suspect {
  seq: number;
  held: number;
  recorded: number;
  since: number;
}

export class Wallets {
  readonly docs: Collection<WalletDoc>;
  readonly holds: Collection<HoldDoc>;
  /** Wallets whose held amount disagreed with their hold records at the last reconcile. */
  private readonly suspects = new Map<string, Suspect>();
  /** Where the next reconcile pass continues (by wallet id), so every wallet gets its turn. */
  private reconcileFrom = '';

  constructor(
    private readonly store: Store,
    private readonly now: Clock,
    private readonly holdTtlMs: number,
  ) {
    this.docs = store.collection<WalletDoc>('wallets');
    this.holds = store.collection<HoldDoc>('billing_holds');
  }

  async init(): Promise<void> {
    await this.docs.createIndex({ keys: { held_uc: 1 } });
    await this.holds.createIndex({ keys: { expires_at: 1 } });
    await this.holds.createIndex({ keys: { wallet_id: 1 } });
    await this.migrate();
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

  /** Creates the wallet if it does not exist yet (wallets are created at sign-up and org creation). */
  async ensure(id: string, ownerType: OwnerType, ownerId: number): Promise<void> {
    await this.docs.updateOne({ _id: id }, { $setOnInsert: walletSeed(ownerType, ownerId, new Date(this.now())) }, { upsert: true });
  }

  /**
   * Hold records whose insert is still committing. The record is written off the request's path
   * (its commit overlaps the upstream call) and `finish` waits for it, so a settle never mistakes a
   * record in flight for one already finished. A crash in between leaves held money without a
   * record, which the reconciler returns (see reconcile()).
   */
  private readonly pendingRecords = new Map<string, Promise<void>>();

  /** Reserves `amount` µ¢; resolves to the hold id, or null when the spendable balance is short. */
  async hold(walletId: string, amount: number, requestId: string): Promise<string | null> {
    const reserved = await this.docs.updateOne(
      { _id: walletId, balance_uc: { $gte: amount } },
      { $inc: { balance_uc: -amount, held_uc: amount, seq: 1 } },
    );
    if (reserved.modifiedCount !== 1) return null;
    const id = `h${randomUUID().replaceAll('-', '')}`;
    const record = this.holds
      .insertOne({ _id: id, wallet_id: walletId, amount_uc: amount, expires_at: new Date(this.now() + this.holdTtlMs), request_id: requestId })
      .then(
        () => undefined,
        async (err: unknown) => {
          // No record: give the reservation back; finish() then finds no hold (an outlived call).
          await this.docs.updateOne({ _id: walletId }, { $inc: { balance_uc: amount, held_uc: -amount, seq: 1 } });
          throw err;
        },
      )
      .finally(() => this.pendingRecords.delete(id));
    record.catch(() => undefined); // observed by finish(); never an unhandled rejection
    this.pendingRecords.set(id, record);
    return id;
  }

  /**
   * Ends a hold: debits `charge` (≤ its amount), returns the rest, credits `carryPc`. Resolves to
   * the wallet after the write, or null when the hold was already finished (or swept).
   */
  async finish(holdId: string, charge: number, carryPc: number): Promise<WalletDoc | null> {
    await this.pendingRecords.get(holdId)?.catch(() => undefined);
    const hold = await this.holds.findOneAndDelete({ _id: holdId });
    if (!hold) return null;
    const inc: Record<string, number> = { balance_uc: hold.amount_uc - Math.min(charge, hold.amount_uc), held_uc: -hold.amount_uc, seq: 1 };
    if (carryPc > 0) inc.carry_pc = carryPc;
    return this.docs.findOneAndUpdate({ _id: hold.wallet_id }, { $inc: inc }, { returnDocument: 'after' });
  }

  /**
   * A debit without a hold (a call that outlived its hold): as much of `charge` as the spendable
   * balance allows, never below zero. Resolves to what was taken and the wallet after.
   */
  async debitAvailable(walletId: string, charge: number): Promise<{ taken: number; wallet: WalletDoc | null }> {
    for (let attempt = 0; attempt < 8; attempt++) {
      const w = await this.get(walletId);
      const take = Math.min(charge, w?.balance_uc ?? 0);
      if (!w || take <= 0) return { taken: 0, wallet: w };
      const after = await this.docs.findOneAndUpdate({ _id: walletId, balance_uc: w.balance_uc }, { $inc: { balance_uc: -take } }, { returnDocument: 'after' });
      if (after) return { taken: take, wallet: after };
    }
    return { taken: 0, wallet: await this.get(walletId) };
  }

  /** Moves whole 1,000 µ¢ units of carry into the balance (conditional, so concurrent folds never overshoot). */
  async foldCarry(w: WalletDoc): Promise<void> {
    const units = Math.floor((w.carry_pc ?? 0) / CARRY_FOLD_PC);
    if (units <= 0) return;
    await this.docs.updateOne(
      { _id: w._id, carry_pc: { $gte: units * CARRY_FOLD_PC } },
      { $inc: { carry_pc: -units * CARRY_FOLD_PC, balance_uc: (units * CARRY_FOLD_PC) / PICOCENTS_PER_MICROCENT } },
    );
  }

  /**
   * Credits `amount` µ¢ once per `creditId`: the wallet remembers its last credits, so re-applying
   * one (a retry after a crash) is a no-op. Resolves to the wallet after, or null if it is missing.
   */
  async credit(walletId: string, creditId: string, amount: number): Promise<WalletDoc | null> {
    const applied = await this.docs.findOneAndUpdate(
      { _id: walletId, applied_topups: { $ne: creditId } },
      { $inc: { balance_uc: amount }, $push: { applied_topups: { $each: [creditId], $slice: -64 } } },
      { returnDocument: 'after' },
    );
    return applied ?? this.get(walletId);
  }

  async setThreshold(walletId: string, cents: number): Promise<WalletDoc | null> {
    return this.docs.findOneAndUpdate({ _id: walletId }, { $set: { low_balance_threshold_cents: cents } }, { returnDocument: 'after' });
  }

  /**
   * Returns expired holds, up to `limit`; resolves to the number returned. Each is marked
   * (`marks.mark`, which also keeps two sweeps off one hold) before its record is deleted, so a call
   * that outlived its hold finds the mark the moment the hold is gone; the mark is taken back when
   * the call finished the hold first.
   */
  async sweep(limit: number, marks: SweepMarks): Promise<number> {
    const due = await this.holds.find({ expires_at: { $lte: new Date(this.now()) } }, { limit, sort: { expires_at: 1 } });
    let returned = 0;
    for (const h of due) {
      if (!(await marks.mark(h.wallet_id, h._id, h.amount_uc))) continue;
      if (await this.finish(h._id, 0, 0)) returned++;
      else await marks.unmark(h._id);
    }
    return returned;
  }

  /**
   * Gives back what wallets hold beyond their hold records (left by a crash between two writes),
   * once a wallet has shown the same disagreement, untouched, for `quietMs`. Resolves to the number
   * of wallets repaired. A disagreement the other way (records without a reservation) cannot come
   * from a crash and is only reported.
   */
  async reconcile(quietMs: number, report: (err: Error) => void): Promise<number> {
    const nowMs = this.now();
    const busy = await this.docs.find({ held_uc: { $gt: 0 }, _id: { $gt: this.reconcileFrom } }, { sort: { _id: 1 }, limit: 1000 });
    this.reconcileFrom = busy.length === 1000 ? busy.at(-1)!._id : '';
    const seen = new Set<string>();
    let repaired = 0;
    for (const w of busy) {
      seen.add(w._id);
      const records = await this.holds.find({ wallet_id: w._id }, { limit: 100_000 });
      const recorded = records.reduce((sum, h) => sum + h.amount_uc, 0);
      const seq = w.seq ?? 0;
      const prev = this.suspects.get(w._id);
      if (recorded === w.held_uc) {
        this.suspects.delete(w._id);
      } else if (!prev || prev.seq !== seq || prev.held !== w.held_uc || prev.recorded !== recorded) {
        this.suspects.set(w._id, { seq, held: w.held_uc, recorded, since: nowMs });
      } else if (nowMs - prev.since >= quietMs) {
        this.suspects.delete(w._id);
        const residue = w.held_uc - recorded;
        if (residue < 0) {
          report(new Error(`wallet ${w._id}: hold records total ${recorded} µ¢ but only ${w.held_uc} µ¢ is held`));
          continue;
        }
        const res = await this.docs.updateOne({ _id: w._id, seq, held_uc: w.held_uc }, { $inc: { held_uc: -residue, balance_uc: residue, seq: 1 } });
        repaired += res.modifiedCount;
      }
    }
    if (this.reconcileFrom === '') for (const id of this.suspects.keys()) if (!seen.has(id)) this.suspects.delete(id);
    return repaired;
  }
}
