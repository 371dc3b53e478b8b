// Usage records and their daily rollups, written exactly once per call across crashes.
//
// A call's record is first written by its settle, into the wallet document with the debit
// (`usage_outbox`, one compact string: usage-entry.ts), so the two reach the disk in one
// single-document write, on MongoDB as on the embedded store: no crash can keep one without the
// other. The settle also hands the record to this log's in-memory buffer, written every
// `flushIntervalMs` or as soon as it holds `flushMaxRecords` records, as a batch (see `write`):
// `usage_records` (idempotent by the record's id), then the `$inc`s of the rollups and of the
// per-key daily token (tpd) and spend (cpd, cpm) counters (what the call used less what its hold
// reserved there, in the windows of its hold: limits.ts `settledCounts`), then the entries are
// pulled from the outboxes. A crash loses the buffer, not the records: recovery (usage-recovery.ts) writes what the
// outboxes still hold and finishes a batch that was cut short, so records, rollups and counters
// match the wallets' debits. Records and rollups trail the calls by at most one flush interval;
// close() writes what is buffered. A failed write is retried at the next flush; past `maxBuffered`
// unwritten records the oldest batches are set aside (reported) for the recovery to write.
//
// Rollups, so that a usage summary reads a few rows per day instead of every record:
// - `usage_daily`: per account, UTC day, model, key prefix and member;
// - `usage_daily_model`: per account, UTC day and model (the account-wide day and model views);
// - `usage_daily_end_user`: per account, UTC day, the client's end user and member, for the calls
//   that named an end user (`safety_identifier` or `user`): the end-user view.
import type { Clock, WindowCounters } from '../shared/common.ts';
import { pageOf, type Page, type PageQuery } from '../shared/pages.ts';
import { isDuplicateKeyError, type Collection, type Store } from '../store/port.ts';
import { utcDay, type OwnerType } from './money.ts';
import { settledCounts } from './limits.ts';

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
  /** The API key (its id: the per-key counters are fed from it). */
  key_id?: number;
  /** The batch that inserted it (usage.ts `write`), which alone rolls it up. */
  batch?: string;
  /** Of prompt_tokens, those the upstream read from its cache (priced as cached input), when it said. */
  cached_tokens?: number;
  /** When the call's hold was taken (epoch ms): the key's limit windows it counts in (else `ts`'s). */
  held_at?: number;
  /** What the hold reserved in the key's token window and spend windows (billing/limits.ts `reserve`). */
  reserved_tokens?: number;
  reserved_uc?: number;
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

/** What the log needs of the wallets' outboxes. */
export interface UsageOutbox {
  /** Takes written entries out of a wallet's outbox. */
  pull(walletId: string, entries: string[]): Promise<void>;
}

/** Records to write together, and the outbox entries (wallet id, entry) that hold them. */
export interface Batch {
  id: string;
  records: UsageRecordDoc[];
  entries: [walletId: string, entry: string][];
}

/** A batch being written (usage.ts `write`): deleted once its rollups are applied. */
export interface BatchDoc {
  _id: string;
  /** The instance writing it (instances.ts tag): a dead one's batch is finished by recovery. */
  instance: string;
  ids: string[];
  created_at: Date;
  [k: string]: unknown;
}

const unlessDuplicate = (err: unknown): void => {
  if (!isDuplicateKeyError(err)) throw err;
};

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
  private readonly batches: Collection<BatchDoc>;
  private readonly daily: Collection<RollupDoc>;
  private readonly dailyModel: Collection<RollupDoc>;
  private readonly dailyEndUser: Collection<RollupDoc>;
  private buffer: { record: UsageRecordDoc; entry: string }[] = [];
  /** Batches formed and not yet written (a failed write is retried, in order, at the next flush). */
  private unwritten: Batch[] = [];
  /** Rollup and counter writes that failed, retried at the next flush. */
  private failed: Op[] = [];
  private chain: Promise<void> = Promise.resolve();
  private scheduled = false;
  private timer: NodeJS.Timeout | null = null;
  private seq = 0;
  private batchSeq = 0;

  constructor(
    store: Store,
    private readonly now: Clock,
    private readonly windows: WindowCounters,
    private readonly outbox: UsageOutbox,
    /** This instance's tag (instances.ts): in record and batch ids, and on its batches. */
    private readonly tag: string,
    private readonly options: UsageLogOptions,
    private readonly onError: (err: unknown, what: string) => void,
  ) {
    this.records = store.collection<UsageRecordDoc>('usage_records');
    this.batches = store.collection<BatchDoc>('usage_batches');
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
    return `${idTimePrefix(tsMs)}${this.tag}${this.seq.toString(36).padStart(6, '0')}`;
  }

  /**
   * Buffers a record whose `entry` its settle wrote into the wallet's outbox; its tokens count
   * towards its key's daily (TPD) counter and its cost towards the key's spend (CPD, CPM) counters,
   * in the windows of its hold.
   */
  add(record: UsageRecordDoc, entry: string): void {
    this.buffer.push({ record, entry });
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
    if (this.buffer.length > 0) {
      const items = this.buffer;
      this.buffer = [];
      const batch = this.batch(
        items.map((i) => i.record),
        items.map((i) => [i.record.owner, i.entry]),
      );
      this.options.onRecords?.(batch.records);
      this.unwritten.push(batch);
    }
    const ops = this.failed;
    this.failed = [];
    if (ops.length > 0) await this.run(ops);
    while (this.unwritten.length > 0) {
      try {
        await this.write(this.unwritten[0]!);
      } catch (err) {
        this.onError(err, 'usage write failed; retrying at the next flush');
        break;
      }
      this.unwritten.shift();
    }
    let excess = this.unwritten.reduce((n, b) => n + b.records.length, 0) - this.options.maxBuffered;
    while (excess > 0 && this.unwritten.length > 0) {
      const dropped = this.unwritten.shift()!;
      excess -= dropped.records.length;
      this.onError(
        new Error(
          `set aside ${dropped.records.length} usage records: the store has been failing; they stay in their wallets' outboxes, written by the next recovery`,
        ),
        'usage buffer full',
      );
    }
  }

  /** A batch of records to write, with the outbox entries (by wallet) that hold them. */
  batch(records: UsageRecordDoc[], entries: [walletId: string, entry: string][]): Batch {
    this.batchSeq = (this.batchSeq + 1) % 36 ** 6;
    return { id: `b${this.now().toString(36)}${this.tag}${this.batchSeq.toString(36)}`, records, entries };
  }

  /**
   * Writes a batch's records exactly once each, then its rollups and counters, then takes its
   * entries out of the wallets' outboxes; a retry, on this or any instance, repeats nothing:
   * 1. the batch's document (its id, instance and record ids), so a crash after step 2 leaves a
   *    trace of whose rollups are due;
   * 2. the records, each marked with the batch: an insert is idempotent by `_id`, and a record
   *    already there belongs to the batch that inserted it, which alone rolls it up;
   * 3. in one event turn, the rollups and counters of the records this batch inserted, and the
   *    deletion of the batch document (one commit on the embedded store: all or nothing);
   * 4. with step 3, the entries are pulled from their wallets (lazily: an entry left behind is
   *    found written), so a busy wallet carries its outbox for as short a time as it can.
   */
  async write(b: Batch): Promise<void> {
    if (b.records.length === 0) return this.pull(b.entries);
    const ids = b.records.map((r) => r._id);
    await this.batches.insertOne({ _id: b.id, instance: this.tag, ids, created_at: new Date(this.now()) }).catch(unlessDuplicate);
    const owned = await this.insert(b.id, b.records);
    // The records are written and the batch document answers for their rollups: the entries can go.
    await Promise.all([this.finishBatch(b.id, owned), this.pull(b.entries)]);
  }

  /** Step 2: inserts the records marked with the batch; resolves to those this batch inserted. */
  private async insert(batchId: string, records: UsageRecordDoc[]): Promise<UsageRecordDoc[]> {
    for (const r of records) r.batch = batchId;
    try {
      await this.records.insertMany(records, { ordered: false });
      return records;
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      return this.ownedBy(
        batchId,
        records.map((r) => r._id),
      );
    }
  }

  /** The records among `ids` that `batchId` inserted. */
  async ownedBy(batchId: string, ids: string[]): Promise<UsageRecordDoc[]> {
    const stored = await this.records.find({ _id: { $in: ids } }, { limit: ids.length });
    return stored.filter((r) => r.batch === batchId);
  }

  /** Step 3: the rollups and counters of `owned`, and the batch document's deletion, in one event turn. */
  async finishBatch(batchId: string, owned: readonly UsageRecordDoc[]): Promise<void> {
    await this.run([...this.rollups(owned), ...this.counters(owned), () => this.batches.deleteOne({ _id: batchId })]);
  }

  /** Step 4. */
  private async pull(entries: readonly [string, string][]): Promise<void> {
    const byWallet = new Map<string, string[]>();
    for (const [walletId, entry] of entries) {
      const list = byWallet.get(walletId);
      if (list) list.push(entry);
      else byWallet.set(walletId, [entry]);
    }
    const results = await Promise.allSettled([...byWallet].map(([walletId, list]) => this.outbox.pull(walletId, list)));
    for (const res of results) if (res.status === 'rejected') this.onError(res.reason, 'usage outbox cleanup failed (harmless: found written next time)');
  }

  /** Issues `ops` in one event turn (the embedded store commits them together); failures are retried at the next flush. */
  private async run(ops: Op[]): Promise<void> {
    const results = await Promise.allSettled(ops.map((op) => op()));
    results.forEach((res, i) => {
      if (res.status === 'fulfilled') return;
      this.failed.push(ops[i]!);
      this.onError(res.reason, 'usage write failed; retrying at the next flush');
    });
  }

  private rollups(records: readonly UsageRecordDoc[]): Op[] {
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
      bump(fine, JSON.stringify([r.owner, day, r.model, r.key_prefix, r.user_id]), {
        owner: r.owner,
        day,
        model: r.model,
        key_prefix: r.key_prefix,
        user_id: r.user_id,
      });
      bump(coarse, JSON.stringify([r.owner, day, r.model]), { owner: r.owner, day, model: r.model });
      if (r.end_user !== undefined) {
        bump(endUsers, JSON.stringify([r.owner, day, r.end_user, r.user_id]), { owner: r.owner, day, end_user: r.end_user, user_id: r.user_id });
      }
    }
    const upsert = (c: Collection<RollupDoc>, id: string, row: { set: Record<string, unknown>; inc: Totals }) => () =>
      c.updateOne({ _id: id }, { $inc: row.inc, $setOnInsert: row.set }, { upsert: true });
    return [
      ...[...fine].map(([id, row]) => upsert(this.daily, id, row)),
      ...[...coarse].map(([id, row]) => upsert(this.dailyModel, id, row)),
      ...[...endUsers].map(([id, row]) => upsert(this.dailyEndUser, id, row)),
    ];
  }

  /** The records' counts in their keys' limit windows (limits.ts `settledCounts`). */
  private counters(records: readonly UsageRecordDoc[]): Op[] {
    return settledCounts(records, (period, at) => this.windows.windowStart(period, at)).map((s) => () => this.windows.hit(s.key, s.period, s.n, false, s.at));
  }

  /** Totals per group over the UTC days `from`..`to` (inclusive, `YYYY-MM-DD`), from the rollups. */
  async summary(
    scope: UsageScope,
    from: string,
    to: string,
    groupBy: GroupBy,
  ): Promise<{ groups: { key: string | number; totals: Totals }[]; totals: Totals }> {
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
  /**
   * A page of records, newest first, from before `after`; `range` keeps records made in
   * [fromMs, untilMs). Ids begin with their time (newId), so the range is a range of the index.
   */
  async page<V>(scope: UsageScope, q: PageQuery<string>, range: { fromMs?: number; untilMs?: number }, view: (r: UsageRecordDoc) => V): Promise<Page<V>> {
    const { after } = q;
    const filter: Record<string, unknown> = { owner: scope.owner };
    if (scope.userId !== undefined) filter.user_id = scope.userId;
    const until = range.untilMs !== undefined ? idTimePrefix(range.untilMs) : undefined;
    // biome-ignore lint/complexity/useMathMinMax: ids are strings, compared as strings (Math.min would make NaN of them)
    const below = after !== undefined && until !== undefined ? (after < until ? after : until) : (after ?? until);
    const bounds: Record<string, string> = {};
    if (below !== undefined) bounds.$lt = below;
    if (range.fromMs !== undefined) bounds.$gte = idTimePrefix(range.fromMs);
    if (Object.keys(bounds).length > 0) filter._id = bounds;
    const rows = await this.records.find(filter, { sort: { _id: -1 }, limit: q.limit + 1 });
    return pageOf(rows, q.limit, view);
  }
}

/** A record id's first nine characters: its time in ms, base 36, so ids sort by time. */
const idTimePrefix = (ms: number): string => ms.toString(36).padStart(9, '0');
