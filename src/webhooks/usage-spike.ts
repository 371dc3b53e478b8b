// usage_spike: tokens an account consumed in the current window (default: the 5-minute bucket,
// aligned to the clock) exceed `multiple` (5) times its baseline — the average per window over the
// trailing `baselineHours` (24) before it — and at least `minTokens` (10 000), so small accounts
// and quiet hours do not page anyone. Fires at most once per account and window, whatever the
// number of instances (a conditional write decides).
//
// Fed by the usage flush (every 100 ms): one `findOneAndUpdate` per account in the batch adds its
// tokens to the bucket and returns the account's buckets in the same write, so detection costs no
// extra read. Buckets live in one document per account (`usage_spike_buckets`), pruned to the
// baseline range.
import type { Config } from '../config.ts';
import type { Clock } from '../shared/common.ts';
import type { EventSink } from '../shared/events.ts';
import type { Store, Collection } from '../store/port.ts';

export type UsageSpikeConfig = Config['webhooks']['usageSpike'];

interface BucketDoc {
  _id: string;
  owner_type: 'user' | 'org';
  owner_id: number;
  /** Window start (epoch ms, as a string key) → tokens. */
  b: Record<string, number>;
  /** Start of the window whose spike was last emitted. */
  fired: number | null;
  [k: string]: unknown;
}

export interface UsageSample {
  ts: Date;
  owner_type: 'user' | 'org';
  owner_id: number;
  prompt_tokens?: number;
  completion_tokens?: number;
}

export interface SpikeVerdict {
  tokens: number;
  baseline: number;
  spike: boolean;
}

/** The rule, pure: `buckets` maps window starts to tokens. */
export function judge(buckets: Record<string, number>, windowStart: number, cfg: UsageSpikeConfig): SpikeVerdict {
  const size = cfg.windowSeconds * 1000;
  const span = cfg.baselineHours * 3_600_000;
  const windows = Math.max(1, Math.floor(span / size));
  let past = 0;
  for (const [start, n] of Object.entries(buckets)) {
    const s = Number(start);
    if (s < windowStart && s >= windowStart - span) past += n;
  }
  const tokens = buckets[String(windowStart)] ?? 0;
  const baseline = past / windows;
  return { tokens, baseline, spike: tokens >= cfg.minTokens && tokens > cfg.multiple * baseline };
}

export class UsageSpikeDetector {
  private readonly buckets: Collection<BucketDoc>;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    store: Store,
    private readonly events: EventSink,
    private readonly cfg: UsageSpikeConfig,
    private readonly now: Clock,
    private readonly onError: (err: unknown, what: string) => void,
  ) {
    this.buckets = store.collection<BucketDoc>('usage_spike_buckets');
  }

  /** Called with each flushed batch of usage records; never throws, never waits. */
  observe = (records: readonly UsageSample[]): void => {
    if (!this.cfg.enabled) return;
    const size = this.cfg.windowSeconds * 1000;
    const sums = new Map<string, { type: 'user' | 'org'; id: number; start: number; tokens: number }>();
    for (const r of records) {
      const tokens = (r.prompt_tokens ?? 0) + (r.completion_tokens ?? 0);
      if (tokens <= 0) continue;
      const start = Math.floor(r.ts.getTime() / size) * size;
      const key = `${r.owner_type}:${r.owner_id}@${start}`;
      const row = sums.get(key) ?? { type: r.owner_type, id: r.owner_id, start, tokens: 0 };
      row.tokens += tokens;
      sums.set(key, row);
    }
    if (sums.size === 0) return;
    this.chain = this.chain
      .then(() => Promise.all([...sums.values()].map((row) => this.add(row))))
      .then(
        () => undefined,
        (err: unknown) => this.onError(err, 'usage_spike detection failed'),
      );
  };

  /** Resolves when the batches observed so far are processed (tests, shutdown). */
  settled(): Promise<void> {
    return this.chain;
  }

  private async add(row: { type: 'user' | 'org'; id: number; start: number; tokens: number }): Promise<void> {
    const _id = `${row.type}:${row.id}`;
    const doc = await this.buckets.findOneAndUpdate(
      { _id },
      { $inc: { [`b.${row.start}`]: row.tokens }, $setOnInsert: { owner_type: row.type, owner_id: row.id, fired: null } },
      { upsert: true, returnDocument: 'after' },
    );
    if (!doc) return;
    // Only the window being filled now can fire (a late batch for an old window cannot).
    const size = this.cfg.windowSeconds * 1000;
    const current = Math.floor(this.now() / size) * size;
    await this.prune(doc, current);
    if (row.start !== current || doc.fired === current) return;
    const verdict = judge(doc.b, current, this.cfg);
    if (!verdict.spike) return;
    const won = await this.buckets.updateOne({ _id, $or: [{ fired: null }, { fired: { $lt: current } }] }, { $set: { fired: current } });
    if (won.modifiedCount !== 1) return;
    await this.events.emit({
      event: 'usage_spike',
      owner: { type: row.type, id: row.id },
      fields: {
        [row.type === 'user' ? 'user_id' : 'org_id']: row.id,
        window_seconds: this.cfg.windowSeconds,
        tokens: verdict.tokens,
        baseline_tokens: Math.round(verdict.baseline),
        multiple: this.cfg.multiple,
      },
    });
  }

  private async prune(doc: BucketDoc, current: number): Promise<void> {
    const oldest = current - this.cfg.baselineHours * 3_600_000;
    const stale = Object.keys(doc.b).filter((k) => Number(k) < oldest);
    if (stale.length < 16) return; // batch the clean-up
    await this.buckets.updateOne({ _id: doc._id }, { $unset: Object.fromEntries(stale.map((k) => [`b.${k}`, ''])) });
  }
}
