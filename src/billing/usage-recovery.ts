// Finishing the usage writes a dead instance left (see usage.ts for the write's steps), so that
// after any crash records, rollups and counters match the wallets' debits:
// 1. a batch document left behind means its records may be in `usage_records` without their rollups
//    and counters: those it inserted are rolled up (one event turn, as the batch itself would have);
// 2. entries still in a wallet's outbox are records whose batch never finished: those not in
//    `usage_records` are written as a new batch (an insert is idempotent, and a record already
//    there belongs to the batch that wrote it), then every entry looked at is pulled.
// Run at start (the embedded store: every other instance is dead, every entry is due) and by the
// periodic sweep (MongoDB: batches of instances whose lease expired, entries older than a minute,
// which their own instance would have written long before if it were alive).
import type { Collection } from '../store/port.ts';
import type { WalletDoc } from './money.ts';
import { decodeEntry } from './usage-entry.ts';
import type { BatchDoc, UsageLog, UsageOutbox, UsageRecordDoc } from './usage.ts';

/** Entries older than this are due for recovery when their instance may still be alive (MongoDB). */
export const STALE_ENTRY_MS = 60_000;
const PAGE = 200;

export interface OutboxWallets extends UsageOutbox {
  /** Wallets whose outbox may hold entries, by `_id` after `after`. */
  pending(after: string, limit: number): Promise<WalletDoc[]>;
}

export class UsageRecovery {
  constructor(
    private readonly log: UsageLog,
    private readonly batches: Collection<BatchDoc>,
    private readonly wallets: OutboxWallets,
    private readonly onError: (err: unknown, what: string) => void,
  ) {}

  /**
   * Finishes the batches of dead instances, then writes outbox entries made at or before
   * `cutoffMs`. Resolves to how many batches were finished and records written.
   */
  async run(dead: (tag: string) => boolean, cutoffMs: number): Promise<{ batches: number; records: number }> {
    const batches = await this.finishBatches(dead);
    let records = 0;
    for (let after = ''; ; ) {
      const page = await this.wallets.pending(after, PAGE);
      for (const w of page) records += await this.drainOutbox(w, cutoffMs);
      if (page.length < PAGE) break;
      after = page.at(-1)!._id;
    }
    return { batches, records };
  }

  private async finishBatches(dead: (tag: string) => boolean): Promise<number> {
    let n = 0;
    for (let after = ''; ; ) {
      const page = await this.batches.find({ _id: { $gt: after } }, { sort: { _id: 1 }, limit: PAGE });
      for (const b of page) {
        if (!dead(b.instance)) continue;
        await this.log.finishBatch(b._id, await this.log.ownedBy(b._id, b.ids));
        n++;
      }
      if (page.length < PAGE) return n;
      after = page.at(-1)!._id;
    }
  }

  private async drainOutbox(w: WalletDoc, cutoffMs: number): Promise<number> {
    if ((w.usage_outbox ?? []).length === 0) {
      await this.wallets.pull(w._id, []); // clears the mark
      return 0;
    }
    const due: [string, string][] = [];
    const records: UsageRecordDoc[] = [];
    for (const entry of w.usage_outbox ?? []) {
      const r = decodeEntry(entry, w);
      if (!r) this.onError(new Error(`wallet ${w._id}: unreadable usage outbox entry dropped: ${entry.slice(0, 200)}`), 'usage recovery');
      else if (r.ts.getTime() > cutoffMs) continue;
      else records.push(r);
      due.push([w._id, entry]);
    }
    const written = new Set(
      (await this.log.records.find({ _id: { $in: records.map((r) => r._id) } }, { projection: { _id: 1 }, limit: records.length })).map((r) => r._id),
    );
    const missing = records.filter((r) => !written.has(r._id));
    await this.log.write(this.log.batch(missing, due));
    return missing.length;
  }
}
