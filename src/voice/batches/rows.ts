// A batch's numbers: one document per number in `voice_batch_rows` (this module owns the collection),
// out of the batch actor's snapshot (up to 10,000 numbers would not fit in it), as a call's turns
// are out of the call's (src/voice/transcript.ts). `_id` is the batch id and the row's index, so a
// creation replayed writes each row once. A row holds its attempts; the attempt being placed is
// recorded (`dialling`: its number and Idempotency-Key) BEFORE the call is placed, so a restarted
// batch finds it and adopts the call it made, or places it with the same key (src/voice/batches/pacing.ts).
import { isDuplicateKeyError, type Filter, type Store } from '../../store/port.ts';

export const ROW_STATUSES = ['queued', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'voicemail', 'canceled', 'invalid'] as const;
export type RowStatus = (typeof ROW_STATUSES)[number];
/** A row's outcome once no attempt follows. */
export const FINAL_ROW_STATUSES: readonly RowStatus[] = ['completed', 'busy', 'no_answer', 'failed', 'voicemail', 'canceled', 'invalid'];
export type Counts = Record<RowStatus, number> & { total: number };

export interface Attempt {
  call_id: string | null;
  /** The call's status (or `failed` for one never placed: end_reason is then the refusal's code). */
  status: string;
  end_reason: string | null;
  started_at: number | null;
  ended_at: number | null;
  billed_seconds: number | null;
  /** µ¢ (exact); the view shows cents. */
  cost_microcents: number | null;
}

export interface RowDoc {
  /** `${batch id}:${index, zero-padded}` */
  _id: string;
  batch_id: string;
  account: string;
  index: number;
  to: string;
  variables: Record<string, string>;
  metadata: Record<string, string>;
  status: RowStatus;
  attempts: Attempt[];
  /** The attempt in flight: its number (1…), key, and call once placed. */
  current: { attempt: number; key: string; call_id: string | null } | null;
  /** Epoch ms: when the row may be dialled (a retry's gap). */
  next_attempt_at: number;
  final_call_id: string | null;
  /** The row's calls' bills so far, µ¢. */
  cost_microcents: number;
  /** Why an invalid number was refused at creation. */
  error: { code: string; message: string } | null;
  [k: string]: unknown;
}

export const rowId = (batchId: string, index: number): string => `${batchId}:${String(index).padStart(5, '0')}`;

export class BatchRows {
  private readonly rows;

  constructor(store: Store) {
    this.rows = store.collection<RowDoc>('voice_batch_rows');
  }

  async init(): Promise<void> {
    await this.rows.createIndex({ keys: { batch_id: 1, index: 1 } });
    await this.rows.createIndex({ keys: { batch_id: 1, status: 1, next_attempt_at: 1 } });
  }

  /** Writes a new batch's rows; a replay (the same ids) keeps what is there. */
  async insert(docs: RowDoc[]): Promise<void> {
    for (let i = 0; i < docs.length; i += 1000) {
      const chunk = docs.slice(i, i + 1000);
      try {
        await this.rows.insertMany(chunk, { ordered: false });
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
        for (const doc of chunk) await this.rows.insertOne(doc).catch((e: unknown) => (isDuplicateKeyError(e) ? undefined : Promise.reject(e)));
      }
    }
  }

  async counts(batchId: string): Promise<Counts> {
    const counts = { total: 0 } as Counts;
    for (const s of ROW_STATUSES) {
      counts[s] = await this.rows.countDocuments({ batch_id: batchId, status: s });
      counts.total += counts[s];
    }
    return counts;
  }

  /** Rows in index order from `afterIndex` (exclusive), optionally of one status. */
  page(batchId: string, opts: { afterIndex?: number; status?: RowStatus; limit: number }): Promise<RowDoc[]> {
    const filter: Filter = { batch_id: batchId };
    if (opts.status) filter.status = opts.status;
    if (opts.afterIndex !== undefined) filter.index = { $gt: opts.afterIndex };
    return this.rows.find(filter, { sort: { index: 1 }, limit: opts.limit });
  }

  inProgress(batchId: string): Promise<RowDoc[]> {
    return this.rows.find({ batch_id: batchId, status: 'in_progress' }, { sort: { index: 1 } });
  }

  /** Queued rows whose gap has passed, in index order. */
  due(batchId: string, now: number, limit: number): Promise<RowDoc[]> {
    if (limit <= 0) return Promise.resolve([]);
    return this.rows.find({ batch_id: batchId, status: 'queued', next_attempt_at: { $lte: now } }, { sort: { index: 1 }, limit });
  }

  /** The soonest a queued row may be dialled (null: none queued). */
  async nextDue(batchId: string): Promise<number | null> {
    const [first] = await this.rows.find({ batch_id: batchId, status: 'queued' }, { sort: { next_attempt_at: 1 }, limit: 1 });
    return first?.next_attempt_at ?? null;
  }

  /** Sets fields of a row, only while it is `expect` (its status): false when it was not. */
  async update(row: RowDoc, set: Partial<RowDoc>, expect: RowStatus = row.status): Promise<boolean> {
    const res = await this.rows.updateOne({ _id: row._id, status: expect }, { $set: set });
    if (res.matchedCount > 0) Object.assign(row, set);
    return res.matchedCount > 0;
  }

  /** Every queued row canceled (a cancelled batch); calls in progress finish. */
  async cancelQueued(batchId: string): Promise<void> {
    await this.rows.updateMany({ batch_id: batchId, status: 'queued' }, { $set: { status: 'canceled' } });
  }

  /** The batch's calls' bills so far, µ¢ (exact: integers summed). */
  async cost(batchId: string): Promise<number> {
    const billed = await this.rows.find({ batch_id: batchId, cost_microcents: { $gt: 0 } }, { projection: { cost_microcents: 1 } });
    return billed.reduce((sum, r) => sum + r.cost_microcents, 0);
  }

  async remove(batchId: string): Promise<void> {
    await this.rows.deleteMany({ batch_id: batchId });
  }
}
