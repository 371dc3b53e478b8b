// Usage records and their daily rollups.
//
// Settles add a record to an in-memory buffer; the buffer is written every `flushIntervalMs` or as
// soon as it holds `flushMaxRecords` records, in one event turn (so the embedded store commits the
// batch at once), together with the `$inc`s of the rollups and of the per-key daily token (tpd)
// and spend (cpd, cpm) counters the batch adds up to. Records and rollups therefore trail the calls by
// at most one flush interval; close() writes what is buffered. A failed write is retried at the
// next flush; the buffer is bounded (`maxBuffered`), beyond which the oldest unwritten records are
// dropped and reported.
//
// Rollups, so that a usage summary reads a few rows per day instead of every record:
// - `usage_daily`: per account, UTC day, model, key prefix and member;
// - `usage_daily_model`: per account, UTC day and model (the account-wide day and model views);
// - `usage_daily_end_user`: per account, UTC day, the client's end user and member, for the calls
//   that named an end user (`safety_identifier` or `user`): the end-user view.
import { randomBytes } from 'node:crypto';
import type { Clock, WindowCounters } from '../services/common.ts';
import { isDuplicateKeyError, type Collection, type Store } from '../store/port.ts';
import { utcDay, type OwnerType } from './money.ts';
import { WINDOW_CAPS } from './limits.ts';

export interface UsageRecordDoc {
  _id: string;
  ts: Date;
  request_id: string;
  /** The account charged: its wallet id, 'user:<id>' or 'org:<id>'. */
  owner: string;
  owner_type: OwnerType;
  owner_id: number;
  /** The member whose key made the call. */
  user_id: number;
  key_prefix: string;
  model: string;
  model_type: string;
  route: string | null;
  prompt_tokens?: number;
  completion_tokens?: number;
  seconds?: number;
  characters?: number;
  calls?: number;
  /** What was charged, in µ¢ (the exact cost rounded to the nearest µ¢; the wallet keeps the fraction). */
  cost_uc: number;
  status: string;
  latency_ms: number;
  /** The client's end-user id, when the call named one. */
  end_user?: string;
  /** Of prompt_tokens, those the upstream read from its cache (priced as cached input), when it said. */
  cached_tokens?: number;
  [k: string]: unknown;
}

export const METRICS = ['requests', 'errors', 'prompt_tokens', 'completion_tokens', 'seconds', 'characters', 'calls', 'cost_uc'] as const;
export type Metric = (typeof METRICS)[number];
export type Totals = Record<Metric, number>;

interface RollupDoc extends Totals {
  _id: string;
  owner: string;
  day: string;
  model: string;
  key_prefix?: string;
  user_id?: number;
  end_user?: string;
  [k: string]: unknown;
}

export type GroupBy = 'day' | 'model' | 'key_prefix' | 'member' | 'end_user';

/** The record and rollup field a usage summary groups by (a member is a user id). */
export const groupField = (groupBy: GroupBy) => (groupBy === 'member' ? 'user_id' : groupBy);

export interface UsageScope {
  owner: string;
  /** Only this member's usage (a member's own view). */
  userId?: number;
}

export interface UsageLogOptions {
  flushIntervalMs: number;
  flushMaxRecords: number;
  maxBuffered: number;
  /** Told about each batch of records as it is written (the usage_spike detector). */
  onRecords?: (records: readonly UsageRecordDoc[]) => void;
}

type Op = () => Promise<unknown>;

/** The most rollup rows one summary may read; a wider range is refused rather than scanned. */
const MAX_ROLLUP_ROWS = 200_000;

export const emptyTotals = (): Totals => ({ requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, seconds: 0, characters: 0, calls: 0, cost_uc: 0 });

function addInto(t: Totals, r: Partial<Totals>): void {
  for (const m of METRICS) t[m] += r[m] ?? 0;
}

function totalsOf(r: UsageRecordDoc): Totals {
  return {
    requests: 1,
    errors: r.status === 'ok' ? 0 : 1,
    prompt_tokens: r.prompt_tokens ?? 0,
    completion_tokens: r.completion_tokens ?? 0,
    seconds: r.seconds ?? 0,
    characters: r.characters ?? 0,
    calls: r.calls ?? 0,
    cost_uc: r.cost_uc,
  };
}

export class UsageLog {
  readonly records: Collection<UsageRecordDoc>;
  private readonly daily: Collection<RollupDoc>;
  private readonly dailyModel: Collection<RollupDoc>;
  private readonly dailyEndUser: Collection<RollupDoc>;
  private buffer: UsageRecordDoc[] = [];
  /** Tokens and µ¢ charged per key since the last flush, for the key's window counters (WINDOW_CAPS). */
  private perKey = new Map<number, { tokens: number; spend: number }>();
  private failed: Op[] = [];
  private chain: Promise<void> = Promise.resolve();
  private scheduled = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly tag = randomBytes(4).toString('hex');
  private seq = 0;

  constructor(
    store: Store,
    private readonly now: Clock,
    private readonly windows: WindowCounters,
    private readonly options: UsageLogOptions,
    private readonly onError: (err: unknown, what: string) => void,
  ) {
    this.records = store.collection<UsageRecordDoc>('usage_records');
    this.daily = store.collection<RollupDoc>('usage_daily');
    this.dailyModel = store.collection<RollupDoc>('usage_daily_model');
    this.dailyEndUser = store.collection<RollupDoc>('usage_daily_end_user');
  }

  async init(): Promise<void> {
    await this.records.createIndex({ keys: { owner: 1, _id: 1 } });
    await this.records.createIndex({ keys: { owner: 1, user_id: 1, _id: 1 } });
    await this.daily.createIndex({ keys: { owner: 1, day: 1 } });
    await this.daily.createIndex({ keys: { owner: 1, user_id: 1, day: 1 } });
    await this.dailyModel.createIndex({ keys: { owner: 1, day: 1 } });
    await this.dailyEndUser.createIndex({ keys: { owner: 1, day: 1 } });
    await this.dailyEndUser.createIndex({ keys: { owner: 1, user_id: 1, day: 1 } });
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), this.options.flushIntervalMs);
    this.timer.unref();
  }

  /** Stops the timer and writes everything buffered. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  /** Ids sort by time (then instance and sequence), so the newest-first pages walk an index. */
  newId(tsMs: number): string {
    this.seq = (this.seq + 1) % 36 ** 6;
    return `${tsMs.toString(36).padStart(9, '0')}${this.tag}${this.seq.toString(36).padStart(6, '0')}`;
  }

  /** Buffers a record; `tokens` are added to the key's daily (TPD) counter with it, its cost to its spend (CPD, CPM) counters. */
  add(record: UsageRecordDoc, keyId: number, tokens: number): void {
    this.buffer.push(record);
    if (tokens > 0 || record.cost_uc > 0) {
      const fed = this.perKey.get(keyId) ?? { tokens: 0, spend: 0 };
      fed.tokens += tokens;
      fed.spend += record.cost_uc;
      this.perKey.set(keyId, fed);
    }
    if (this.buffer.length >= this.options.flushMaxRecords && !this.scheduled) {
      this.scheduled = true;
      void this.flush();
    }
  }

  /** Writes what is buffered (after any flush in progress). */
  flush(): Promise<void> {
    this.chain = this.chain.then(() => this.drain());
    return this.chain;
  }

  private async drain(): Promise<void> {
    this.scheduled = false;
    const records = this.buffer;
    const perKey = this.perKey;
    this.buffer = [];
    this.perKey = new Map();
    const ops = this.failed;
    this.failed = [];
    if (records.length === 0 && perKey.size === 0 && ops.length === 0) return;
    if (records.length > 0) this.options.onRecords?.(records);

    // One insertMany for the batch; on a retry, records already written come back as duplicates.
    if (records.length > 0) {
      ops.push(() =>
        this.records.insertMany(records, { ordered: false }).catch((err: unknown) => {
          if (!isDuplicateKeyError(err)) throw err;
          return { insertedCount: err.insertedCount };
        }),
      );
    }
    const fine = new Map<string, { set: Record<string, unknown>; inc: Totals }>();
    const coarse = new Map<string, { set: Record<string, unknown>; inc: Totals }>();
    const endUsers = new Map<string, { set: Record<string, unknown>; inc: Totals }>();
    for (const r of records) {
      const day = utcDay(r.ts.getTime());
      const t = totalsOf(r);
      const bump = (into: typeof fine, id: string, set: Record<string, unknown>) => {
        const row = into.get(id) ?? { set, inc: emptyTotals() };
        addInto(row.inc, t);
        into.set(id, row);
      };
      bump(fine, JSON.stringify([r.owner, day, r.model, r.key_prefix, r.user_id]), { owner: r.owner, day, model: r.model, key_prefix: r.key_prefix, user_id: r.user_id });
      bump(coarse, JSON.stringify([r.owner, day, r.model]), { owner: r.owner, day, model: r.model });
      if (r.end_user !== undefined) {
        bump(endUsers, JSON.stringify([r.owner, day, r.end_user, r.user_id]), { owner: r.owner, day, end_user: r.end_user, user_id: r.user_id });
      }
    }
    const upsert = (c: Collection<RollupDoc>, id: string, row: { set: Record<string, unknown>; inc: Totals }) => () =>
      c.updateOne({ _id: id }, { $inc: row.inc, $setOnInsert: row.set }, { upsert: true });
    for (const [id, row] of fine) ops.push(upsert(this.daily, id, row));
    for (const [id, row] of coarse) ops.push(upsert(this.dailyModel, id, row));
    for (const [id, row] of endUsers) ops.push(upsert(this.dailyEndUser, id, row));
    // Every key is counted, so a cap set during its window counts the window's usage so far.
    for (const [keyId, fed] of perKey) {
      for (const cap of WINDOW_CAPS) {
        const n = fed[cap.fed];
        if (n > 0) ops.push(() => this.windows.hit(`${cap.type}:${keyId}`, cap.period, n));
      }
    }

    // All issued in one turn: the embedded store commits them together.
    const results = await Promise.allSettled(ops.map((op) => op()));
    results.forEach((res, i) => {
      if (res.status === 'fulfilled' || isDuplicateKeyError(res.reason)) return; // a retried insert that had landed
      this.failed.push(ops[i]!);
      this.onError(res.reason, 'usage write failed; retrying at the next flush');
    });
    const excess = this.failed.length - this.options.maxBuffered;
    if (excess > 0) {
      this.failed.splice(0, excess);
      this.onError(new Error(`dropped ${excess} usage writes: the store has been failing`), 'usage buffer full');
    }
  }

  /** Totals per group over the UTC days `from`..`to` (inclusive, `YYYY-MM-DD`), from the rollups. */
  async summary(scope: UsageScope, from: string, to: string, groupBy: GroupBy): Promise<{ groups: { key: string | number; totals: Totals }[]; totals: Totals }> {
    const days = { $gte: from, $lte: to };
    const accountWide = scope.userId === undefined;
    const filter = accountWide ? { owner: scope.owner, day: days } : { owner: scope.owner, user_id: scope.userId, day: days };
    const rows =
      groupBy === 'end_user'
        ? await this.dailyEndUser.find(filter, { limit: MAX_ROLLUP_ROWS + 1 })
        : accountWide && (groupBy === 'day' || groupBy === 'model')
          ? await this.dailyModel.find(filter, { limit: MAX_ROLLUP_ROWS + 1 })
          : await this.daily.find(filter, { limit: MAX_ROLLUP_ROWS + 1 });
    if (rows.length > MAX_ROLLUP_ROWS) throw new RangeError('too many rollup rows');
    const groups = new Map<string | number, Totals>();
    const totals = emptyTotals();
    for (const row of rows) {
      const key = row[groupField(groupBy)] as string | number;
      const t = groups.get(key) ?? emptyTotals();
      addInto(t, row);
      addInto(totals, row);
      groups.set(key, t);
    }
    const sorted = [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return { groups: sorted.map(([key, t]) => ({ key, totals: t })), totals };
  }

  /** Newest first; `after` is the id of the last record of the previous page. */
  async page(scope: UsageScope, limit: number, after?: string): Promise<{ records: UsageRecordDoc[]; hasMore: boolean }> {
    const filter: Record<string, unknown> = { owner: scope.owner };
    if (scope.userId !== undefined) filter.user_id = scope.userId;
    if (after !== undefined) filter._id = { $lt: after };
    const rows = await this.records.find(filter, { sort: { _id: -1 }, limit: limit + 1 });
    return { records: rows.slice(0, limit), hasMore: rows.length > limit };
  }
}
