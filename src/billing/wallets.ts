// Wallet operations, each one atomic write on the wallet document:
// - hold: reserve an estimate if the spendable balance covers it, recording the hold (amount and
//   expiry) in the wallet itself, so the reservation and its record can never disagree, even if the
//   process dies right after;
// - finish (settle or release): remove the hold, debit the charge, return the rest, add the carry.
//   Conditional on the hold still being there, so exactly one of settle, release and the sweeper
//   finishes a hold;
// - sweep: holds past their expiry (their process died, or the call outlived the TTL) are returned.
import { randomBytes } from 'node:crypto';
import type { Clock } from '../services/common.ts';
import type { Collection, Store } from '../store/port.ts';
import { CARRY_FOLD_PC, PICOCENTS_PER_MICROCENT, walletSeed, type HoldEntry, type OwnerType, type WalletDoc } from './money.ts';

const MIGRATION_ID = 'wallets_microcents';

/** Where the sweeper records the holds it returns (see BillingService). */
export interface SweepMarks {
  /** Claims a hold for this sweep: false when another sweep claimed it (and is returning it). */
  mark(walletId: string, holdId: string, amount: number): Promise<boolean>;
  unmark(holdId: string): Promise<void>;
}

export class Wallets {
  readonly docs: Collection<WalletDoc>;

  constructor(
    private readonly store: Store,
    private readonly now: Clock,
    private readonly holdTtlMs: number,
  ) {
    this.docs = store.collection<WalletDoc>('wallets');
  }

  async init(): Promise<void> {
    await this.docs.createIndex({ keys: { hold_exp: 1 }, sparse: true });
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

  /** Reserves `amount` µ¢; resolves to the hold id, or null when the spendable balance is short. */
  async hold(walletId: string, amount: number): Promise<string | null> {
    // A letter first: a numeric path segment could be read as an array index.
    const id = `h${randomBytes(12).toString('base64url')}`;
    const expires = this.now() + this.holdTtlMs;
    const entry: HoldEntry = { a: amount, x: expires };
    const res = await this.docs.updateOne(
      { _id: walletId, balance_uc: { $gte: amount } },
      {
        $inc: { balance_uc: -amount, held_uc: amount, hold_seq: 1 },
        $set: { [`holds.${id}`]: entry },
        $min: { hold_exp: new Date(expires) },
      },
    );
    return res.modifiedCount === 1 ? id : null;
  }

  /**
   * Ends a hold: debits `charge` (≤ amount), returns the rest, credits `carryPc`. Resolves to the
   * wallet after the write, or null when the hold was already finished (or swept).
   */
  async finish(walletId: string, holdId: string, amount: number, charge: number, carryPc: number): Promise<WalletDoc | null> {
    const inc: Record<string, number> = { balance_uc: amount - charge, held_uc: -amount };
    if (carryPc > 0) inc.carry_pc = carryPc;
    return this.docs.findOneAndUpdate(
      { _id: walletId, [`holds.${holdId}`]: { $exists: true } },
      { $inc: inc, $unset: { [`holds.${holdId}`]: '' } },
      { returnDocument: 'after' },
    );
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
   * Returns every expired hold of up to `limit` wallets; resolves to the number returned. Each is
   * marked (`marks.mark`, which also keeps two sweeps off one hold) before it is returned, so a call
   * that outlived its hold finds the mark the moment the hold is gone; the mark is taken back when
   * the call finished the hold first.
   */
  async sweep(limit: number, marks: SweepMarks): Promise<number> {
    const nowMs = this.now();
    const due = await this.docs.find({ hold_exp: { $lte: new Date(nowMs) } }, { limit, sort: { hold_exp: 1 } });
    let returned = 0;
    for (const w of due) {
      for (const [id, h] of Object.entries(w.holds ?? {})) {
        if (h.x > nowMs) continue;
        if (!(await marks.mark(w._id, id, h.a))) continue;
        if (await this.finish(w._id, id, h.a, 0, 0)) returned++;
        else await marks.unmark(id);
      }
      await this.resetExpiry(w._id, nowMs);
    }
    return returned;
  }

  /**
   * Moves `hold_exp` to the earliest expiry still held (or removes it), unless a hold was added since
   * the read (then the next sweep does it): a new hold's expiry must never be lost from the index.
   */
  private async resetExpiry(walletId: string, nowMs: number): Promise<void> {
    const w = await this.get(walletId);
    if (!w || w.hold_exp === undefined) return;
    const expiries = Object.values(w.holds ?? {}).map((h) => h.x);
    const earliest = expiries.length > 0 ? Math.min(...expiries) : null;
    if (earliest !== null && earliest <= nowMs) return; // expired meanwhile: the next sweep returns it
    await this.docs.updateOne(
      { _id: walletId, hold_seq: w.hold_seq ?? 0, hold_exp: w.hold_exp },
      earliest === null ? { $unset: { hold_exp: '' } } : { $set: { hold_exp: new Date(earliest) } },
    );
  }
}
