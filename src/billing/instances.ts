// Which billing instances are alive, so that what a dead one left behind is finished at once rather
// than after the hold TTL. Each BillingService has a short random tag, written into every hold it
// takes and every usage batch it writes, and a lease document (`billing_instances`: tag, instance
// name, expiry) renewed while it runs and deleted when it closes. An owner is known dead when its
// lease is gone or has expired.
// - MongoDB (several processes): a crashed instance's holds and batches are finished by any
//   instance's sweep once its lease expires (`billing.instanceLeaseSeconds`, 30 s).
// - The embedded store has one owner, the process that opened it: at start every other lease is
//   dead, so `forgetOthers` drops them and the start-up sweep finishes everything left at once.
// Liveness is read after the holds it judges (see Wallets.sweep): a hold was written after its
// owner's lease, so a lease read later always sees an owner that is alive. An instance alive but
// unable to renew for a whole lease (store unreachable, event loop stalled) is taken for dead: its
// holds are returned (its calls are then charged without them, once, as after an expiry) and a usage
// batch it is writing may be rolled up twice; the lease is sized to make that a real outage.
import type { Clock } from '../shared/common.ts';
import type { Collection, Store } from '../store/port.ts';

interface LeaseDoc {
  _id: string;
  instance: string;
  expires_at: Date;
  [k: string]: unknown;
}

/** Dead leases are kept this long after expiry (TTL cleanup only: liveness compares times itself). */
const KEEP_EXPIRED_SECONDS = 86_400;

export class InstanceLeases {
  private readonly docs: Collection<LeaseDoc>;

  constructor(
    store: Store,
    private readonly now: Clock,
    /** This instance's tag: short, no spaces (it is part of every hold token). */
    readonly tag: string,
    private readonly instance: string,
    private readonly leaseMs: number,
  ) {
    this.docs = store.collection<LeaseDoc>('billing_instances');
  }

  /** Creates the index and takes this instance's lease (before any hold names it). */
  async init(): Promise<void> {
    await this.docs.createIndex({ keys: { expires_at: 1 }, expireAfterSeconds: KEEP_EXPIRED_SECONDS });
    await this.renew();
  }

  async renew(): Promise<void> {
    await this.docs.updateOne({ _id: this.tag }, { $set: { instance: this.instance, expires_at: new Date(this.now() + this.leaseMs) } }, { upsert: true });
  }

  /** Gives the lease up (graceful close, once nothing of this instance is in flight). */
  async release(): Promise<void> {
    await this.docs.deleteOne({ _id: this.tag });
  }

  /** The store has a single owner and it is this process: every other instance is dead. */
  async forgetOthers(): Promise<void> {
    await this.docs.deleteMany({ _id: { $ne: this.tag } });
  }

  /** The tags whose lease is current (this instance's always). */
  async live(): Promise<Set<string>> {
    const leases = await this.docs.find({ expires_at: { $gt: new Date(this.now()) } }, { limit: 10_000 });
    return new Set([this.tag, ...leases.map((l) => l._id)]);
  }

  /** A test for "known dead": a tag that has no current lease (undefined: no owner named, never dead). */
  async deadTest(): Promise<(tag: string | undefined) => boolean> {
    const live = await this.live();
    return (tag) => tag !== undefined && !live.has(tag);
  }
}
