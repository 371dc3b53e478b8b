// Leases: one owner per actor. An actor that is custodial (not final, not in an 'idle'-tagged
// state) is held by one instance under a lease renewed by the heartbeat; an idle one is held for a
// short grace after each write (so a conversation's next turn costs one write), then by nobody.
// Every grab bumps the actor's epoch, the fencing token of its side effects; the lease's abort
// signal fires when this instance loses that lease (renewal failed or another instance took it).
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Filter } from '../../store/port.ts';
import { ActorBusyError, ActorNotFoundError } from '../errors.ts';
import type { LeaseScope } from '../kinds.ts';
import type { ActorDoc } from '../record.ts';
import type { Entry, Resources } from '../resources.ts';
import type { LeasesPort, Systems, Unowned } from './index.ts';

export class Leases implements LeasesPort {
  private beating = false;
  private readonly ended = new AbortController();

  constructor(
    private readonly res: Resources,
    private readonly sys: Systems,
  ) {
    this.ended.abort();
  }

  /** The current lease of an actor (an aborted scope when this instance holds none). */
  scope(entry: Entry): LeaseScope {
    const lease = entry.lease;
    if (lease && entry.owned) return { epoch: lease.epoch, signal: lease.controller.signal };
    return { epoch: entry.lease?.epoch ?? entry.doc?.epoch ?? 0, signal: this.ended.signal };
  }

  /** Whether this instance holds the actor's lease right now (no store round trip). */
  held(entry: Entry): boolean {
    return entry.owned && entry.leaseUntil > this.res.now();
  }

  /**
   * Makes this instance the owner of the actor and its in-memory copy current, draining its inbox
   * first when the lease is new. Returns the stored document instead when the actor is finished;
   * throws ActorNotFoundError, or ActorBusyError when another live instance keeps the lease longer
   * than `waitMs` (0: do not wait; the caller posts to the inbox instead).
   */
  async own(entry: Entry, waitMs = this.res.leaseWaitMs): Promise<Unowned | null> {
    if (entry.actor && this.held(entry)) return null;
    const giveUpAt = performance.now() + waitMs;
    for (let backoff = 10; ; backoff = Math.min(backoff * 2, 200)) {
      const lease = entry.lease;
      const doc = (await this.acquire(entry, {}))?.doc;
      if (doc) {
        // A new lease aborted the work the in-memory copy had in flight: restore it, which re-runs that work.
        if (!entry.actor || entry.lease !== lease || entry.doc?.rev !== doc.rev) this.sys.residency.load(entry, doc, this.sys.claims.modeFor(entry, doc));
        else entry.doc = doc;
        await this.sys.inbox.drainOwned(entry);
        return null;
      }
      const current = await this.res.actors.findOne({ _id: entry.key });
      if (!current) throw new ActorNotFoundError(entry.kind.kind, entry.id);
      if (current.status !== 'active') {
        if (entry.actor) this.sys.residency.unload(entry);
        entry.doc = current;
        return { finished: current };
      }
      // Someone else holds it: whatever this instance still has in memory is stale.
      if (entry.actor) this.sys.residency.drop(entry, `owned by ${current.owner}`);
      const left = giveUpAt - performance.now();
      if (left <= 0) {
        if (waitMs === 0) return { busy: current };
        throw new ActorBusyError(entry.kind.kind, entry.id, current.owner);
      }
      await sleep(Math.min(backoff, left)); // ref'd on purpose: a caller is waiting on it
    }
  }

  /**
   * The atomic lease grab of an active actor: free, expired or already ours. A grab by an instance
   * bumps its epoch. Returns the document as it now is and who held it before, or null.
   */
  async acquire(entry: Entry, extra: Filter): Promise<{ doc: ActorDoc; previousOwner: string | null } | null> {
    const now = this.res.now();
    const until = new Date(now + this.res.leaseMs);
    // Still ours at the epoch our running work is fenced by: renew in place. A grab would bump the
    // epoch and abort that work, as if another instance had taken the actor (several claim passes
    // at once each found a queued job and re-grabbed the one the first had started: it failed).
    const lease = entry.lease;
    if (entry.owned && lease && !lease.controller.signal.aborted) {
      const renewed = await this.res.actors.findOneAndUpdate(
        { _id: entry.key, status: 'active', ...extra, owner: this.res.me, epoch: lease.epoch },
        { $set: { lease_until: until } },
        { returnDocument: 'after' },
      );
      if (renewed && entry.lease === lease && !lease.controller.signal.aborted) {
        entry.leaseUntil = now + this.res.leaseMs;
        return { doc: renewed, previousOwner: this.res.me };
      }
    }
    const before = await this.res.actors.findOneAndUpdate(
      {
        _id: entry.key,
        status: 'active',
        ...extra,
        $or: [{ owner: this.res.me }, { owner: null }, { lease_until: { $lte: new Date(now) } }],
      },
      { $set: { owner: this.res.me, lease_until: until }, $inc: { epoch: 1 } },
      { returnDocument: 'before' },
    );
    if (!before) return null;
    const epoch = (before.epoch ?? 0) + 1;
    this.grant(entry, epoch, now + this.res.leaseMs);
    return { doc: { ...before, owner: this.res.me, lease_until: until, epoch }, previousOwner: before.owner };
  }

  /** Records that this instance holds the actor until `until` under `epoch`. */
  grant(entry: Entry, epoch: number, until: number): void {
    if (!entry.lease || entry.lease.epoch !== epoch || entry.lease.controller.signal.aborted) {
      entry.lease?.controller.abort();
      entry.lease = { epoch, controller: new AbortController() };
    }
    entry.owned = true;
    entry.leaseUntil = until;
  }

  /** This instance no longer holds the actor: its lease scope aborts. */
  forget(entry: Entry): void {
    entry.owned = false;
    entry.leaseUntil = 0;
    if (entry.lease && !entry.lease.controller.signal.aborted) entry.lease.controller.abort();
  }

  /** Writes `owner: null` for an actor this instance holds (stop, or before unloading it). */
  async release(entry: Entry): Promise<void> {
    const owned = entry.owned;
    this.forget(entry);
    if (owned) await this.res.actors.updateOne({ _id: entry.key, owner: this.res.me }, { $set: { owner: null, lease_until: null } });
  }

  /**
   * Renews the leases of the custodial actors held here (every leaseMs/3). A lease that was not
   * renewed (another instance took it, or the store did not answer) is lost: its scope aborts
   * once less than a third of it is left, before anyone else can take it, and the copy is dropped.
   * An idle actor's grace lease simply ends.
   */
  async heartbeat(): Promise<void> {
    if (this.res.state !== 'running' || this.beating) return;
    const now = this.res.now();
    const held: Entry[] = [];
    for (const entry of this.res.entries.values()) {
      if (!entry.owned) continue;
      if (entry.actor && entry.doc?.custodial) held.push(entry);
      else if (entry.leaseUntil <= now) this.forget(entry);
    }
    if (held.length === 0) return;
    this.beating = true;
    try {
      const until = now + this.res.leaseMs;
      let renewed: Set<string> | null = null;
      try {
        const keys = held.map((entry) => entry.key);
        const result = await this.res.actors.updateMany({ _id: { $in: keys }, owner: this.res.me }, { $set: { lease_until: new Date(until) } });
        if (result.matchedCount === held.length) renewed = new Set(keys);
        else {
          const still = await this.res.actors.find({ _id: { $in: keys }, owner: this.res.me }, { projection: { _id: 1 } });
          renewed = new Set(still.map((doc) => doc._id));
        }
      } catch (err) {
        this.res.log.warn({ err }, 'actor lease renewal failed');
      }
      const after = this.res.now();
      for (const entry of held) {
        if (!entry.owned) continue;
        if (renewed?.has(entry.key)) entry.leaseUntil = until;
        else if (renewed) this.lost(entry, 'lease taken by another instance');
        // The store did not answer: keep trying while more than a third of the lease is left.
        else if (entry.leaseUntil - after <= this.res.leaseMs / 3) this.lost(entry, 'lease not renewed in time');
      }
    } finally {
      this.beating = false;
    }
  }

  /** A held lease is gone: abort its effects and forget the copy (the next use reloads). */
  private lost(entry: Entry, reason: string): void {
    this.res.metrics?.leasesLost.inc({ kind: entry.kind.kind });
    this.forget(entry);
    if (entry.mailbox.pending === 0) this.sys.residency.drop(entry, reason);
    else {
      // A task is running on it: drop it when that task is done.
      void this.sys.residency
        .run(entry, async () => {
          if (!entry.owned) this.sys.residency.drop(entry, reason);
        })
        .catch(() => undefined);
    }
  }
}
