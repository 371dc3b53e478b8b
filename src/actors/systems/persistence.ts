// Persistence: when and how an actor's snapshot is written. Every write is conditional on the
// revision this instance read and on owning the actor: a mismatch is someone else's write, so the
// in-memory copy is dropped (RevisionConflictError), never written over. The kind's policy says
// when (src/actors/kinds.ts): after every event, or by checkpoint (state changes, durable events,
// and otherwise at most every interval, events queued together written once).
// The size limit never loses an actor: a snapshot over it is refused (413) only where nothing but
// the refusing sender's own event would be lost; any other is written all the same and logged at
// error (a checkpoint, an effect's result, a timer: what the actor has already acted on, whose
// loss left a call in `dialing` long past its ring timeout, its hold held and its hang-up refused).
import { performance } from 'node:perf_hooks';
import { RevisionConflictError, SnapshotTooLargeError } from '../errors.ts';
import { projectedFields, type PersistencePolicy } from '../kinds.ts';
import { toView, type ActorDoc, type ActorView } from '../record.ts';
import type { AnyActor, Entry, Resources } from '../resources.ts';
import type { PersistencePort, PersistReason, Systems } from './index.ts';

const EVERY_EVENT: PersistencePolicy = { mode: 'every-event' };

/** The grid checkpoint writes are aligned to (epoch ms). */
const CHECKPOINT_GRID_MS = 250;

export class Persistence implements PersistencePort {
  constructor(
    private readonly res: Resources,
    private readonly sys: Systems,
  ) {}

  policy(entry: Entry): PersistencePolicy {
    return entry.kind.persistence ?? EVERY_EVENT;
  }

  /**
   * After the runtime applied `eventType` to the actor: whether the policy writes now. Under the
   * checkpoint policy a write that can wait is scheduled for the interval's end.
   */
  writesNow(entry: Entry, eventType: string): boolean {
    const policy = this.policy(entry);
    if (policy.mode === 'every-event') return true;
    if (!entry.dirty) return false;
    if (policy.durableEvents?.includes(eventType) || this.moved(entry)) entry.urgent = true;
    if (entry.urgent) return true;
    this.scheduleCheckpoint(entry, policy.intervalMs);
    return false;
  }

  /** A snapshot change: from an event the runtime sent (written by that task) or from inside the actor. */
  changed(entry: Entry, actor: AnyActor): void {
    if (entry.actor !== actor) return;
    entry.dirty = true;
    if (entry.quiet) return;
    const policy = this.policy(entry);
    if (policy.mode === 'checkpoint' && !entry.urgent && !this.moved(entry)) {
      this.scheduleCheckpoint(entry, policy.intervalMs);
      return;
    }
    entry.urgent = true;
    this.queue(entry, 'change');
  }

  /** Queues a write of the actor after what its mailbox holds now (one at a time per actor). */
  queue(entry: Entry, reason: PersistReason): void {
    if (entry.persistQueued) return;
    entry.persistQueued = true;
    const actor = entry.actor;
    const task = this.sys.residency.run(entry, async () => {
      entry.persistQueued = false;
      if (entry.actor !== actor || !entry.actor || !entry.dirty) return;
      // Not held (an idle actor past its grace): take it; a newer stored copy replaces this one.
      if (!this.sys.leases.held(entry)) {
        const unowned = await this.sys.leases.own(entry);
        if (unowned) return;
      }
      if (entry.actor && entry.dirty) await this.persist(entry, reason);
    });
    task.catch((err: unknown) => entry.log.warn({ err }, 'actor change not persisted'));
  }

  /** Resolves once the actor's current changes are written (or rejects when that write fails). */
  durable(entry: Entry): Promise<void> {
    if (!entry.dirty) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      entry.durableWaiters.push({ resolve, reject });
      entry.urgent = true;
      this.queue(entry, 'event');
    });
  }

  /** Stops scheduled writes and fails the callers waiting for one (the actor leaves memory). */
  cancel(entry: Entry, err: unknown): void {
    if (entry.checkpointTimer) clearTimeout(entry.checkpointTimer);
    entry.checkpointTimer = null;
    const waiters = entry.durableWaiters.splice(0);
    for (const w of waiters) w.reject(err);
  }

  /**
   * Writes the current snapshot, conditional on revision and ownership; returns the new view.
   * `refusable`: this write carries one sender's event and nothing else unsaved, to an actor that
   * needs no owner (the caller's word): over the size limit it is refused, and the actor goes back
   * to its stored state. Otherwise a snapshot over the limit is written all the same.
   */
  async persist(entry: Entry, reason: PersistReason, refusable = false): Promise<ActorView> {
    const started = performance.now();
    const actor = entry.actor!;
    const prev = entry.doc!;
    const snap = actor.getSnapshot();
    const now = this.res.now();
    const custodial = snap.status === 'active' && !snap.hasTag('idle');
    const grace = snap.status === 'active' && !custodial && this.res.graceMs > 0;
    const leaseUntil = custodial ? now + this.res.leaseMs : grace ? now + this.res.graceMs : 0;
    const set: Partial<ActorDoc> & Record<string, unknown> = {
      version: entry.kind.version,
      status: snap.status,
      custodial,
      owner: leaseUntil > 0 ? this.res.me : null,
      lease_until: leaseUntil > 0 ? new Date(leaseUntil) : null,
      inbox_applied: entry.inboxApplied,
      updated_at: new Date(now),
    };
    if (snap.status === 'error') {
      // Keep the last good snapshot for inspection; the error snapshot itself cannot be restored.
      set.error = snap.error instanceof Error ? snap.error.message : String(snap.error);
    } else {
      const json = JSON.stringify(actor.getPersistedSnapshot());
      const limit = entry.kind.maxSnapshotBytes ?? this.res.maxSnapshotBytes;
      const bytes = Buffer.byteLength(json);
      if (bytes > limit && refusable) {
        // The event that grew it is not kept: the copy in memory goes back to the stored one.
        const err = new SnapshotTooLargeError(entry.kind.kind, entry.id, bytes, limit);
        this.fail(entry, err);
        this.sys.residency.drop(entry, err.message);
        throw err;
      }
      this.oversized(entry, bytes, limit);
      set.value = snap.value;
      set.snapshot = json;
      Object.assign(set, projectedFields(entry.kind, snap));
    }
    entry.dirty = false;
    entry.urgent = false;
    if (entry.checkpointTimer) clearTimeout(entry.checkpointTimer);
    entry.checkpointTimer = null;
    const waiters = entry.durableWaiters.splice(0);
    let result;
    try {
      result = await this.res.actors.updateOne({ _id: entry.key, rev: prev.rev, owner: this.res.me }, { $set: set, $inc: { rev: 1 } });
    } catch (err) {
      for (const w of waiters) w.reject(err);
      entry.dirty = true;
      throw err;
    }
    if (result.matchedCount === 0) {
      this.res.metrics?.conflicts.inc({ kind: entry.kind.kind });
      const err = new RevisionConflictError(entry.kind.kind, entry.id, prev.rev);
      for (const w of waiters) w.reject(err);
      this.sys.residency.drop(entry, 'revision conflict');
      throw err;
    }
    const doc: ActorDoc = { ...prev, ...set, rev: prev.rev + 1 } as ActorDoc;
    entry.doc = doc;
    entry.lastWriteAt = now;
    if (leaseUntil > 0) this.sys.leases.grant(entry, entry.lease?.epoch ?? prev.epoch ?? 0, leaseUntil);
    else this.sys.leases.forget(entry);
    this.res.metrics?.persistSeconds.observe({ kind: entry.kind.kind, reason }, (performance.now() - started) / 1000);
    for (const w of waiters) w.resolve();
    if (snap.status !== 'active') {
      this.sys.residency.unload(entry);
      this.sys.claims.freed(entry.kind);
    }
    const view = toView(doc);
    for (const listener of this.res.listeners.get(entry.key) ?? []) {
      try {
        listener(view);
      } catch (err) {
        entry.log.error({ err }, 'actor listener threw');
      }
    }
    return view;
  }

  /** Writes what is unsaved (the runtime is stopping, or an idle actor is about to leave memory). */
  async flush(entry: Entry): Promise<void> {
    if (entry.actor && entry.dirty && this.sys.leases.held(entry)) await this.persist(entry, 'stop');
  }

  /**
   * A snapshot over its limit that cannot be refused (its changes are acted on already): written,
   * counted, and logged at error once each time the actor crosses the limit, never dropped.
   */
  private oversized(entry: Entry, bytes: number, limit: number): void {
    const over = bytes > limit;
    if (over) this.res.metrics?.oversized.inc({ kind: entry.kind.kind });
    if (over && !entry.oversized) {
      entry.log.error(
        { bytes, limit },
        'actor snapshot over its size limit: written all the same (the kind must keep its big data out of the snapshot: transcripts, audio)',
      );
    }
    entry.oversized = over;
  }

  private fail(entry: Entry, err: unknown): void {
    const waiters = entry.durableWaiters.splice(0);
    for (const w of waiters) w.reject(err);
  }

  /** Whether the state value, status or custody moved since the last write. */
  private moved(entry: Entry): boolean {
    const actor = entry.actor;
    const doc = entry.doc;
    if (!actor || !doc) return true;
    const snap = actor.getSnapshot();
    if (snap.status !== doc.status) return true;
    if ((snap.status === 'active' && !snap.hasTag('idle')) !== doc.custodial) return true;
    const value = snap.value;
    if (typeof value === 'string' || typeof doc.value === 'string') return value !== doc.value;
    return JSON.stringify(value) !== JSON.stringify(doc.value);
  }

  /**
   * Checkpoints fall on a shared grid (CHECKPOINT_GRID_MS), so the actors due in one slot are
   * written in the same turn and share one commit (one fsync) instead of one each: 200 actors on
   * their own phases made 200 commits a second and cost 10% of a core; on the grid, 3% (bench/actors.ts).
   */
  private scheduleCheckpoint(entry: Entry, intervalMs: number): void {
    if (entry.checkpointTimer || entry.persistQueued) return;
    const now = this.res.now();
    const slot = Math.ceil((entry.lastWriteAt + intervalMs) / CHECKPOINT_GRID_MS) * CHECKPOINT_GRID_MS;
    const due = Math.max(0, slot - now);
    entry.checkpointTimer = setTimeout(() => {
      entry.checkpointTimer = null;
      if (entry.dirty) this.queue(entry, 'checkpoint');
    }, due);
    entry.checkpointTimer.unref();
  }
}
