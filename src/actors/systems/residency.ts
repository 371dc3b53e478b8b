// Residency: which actors are in this instance's memory. Loads an actor from its document (with
// its kind's effects and resources), unloads it (disposing the resources), evicts idle ones and
// caps memory, and reads an in-memory actor's view. Every task on an actor runs in its mailbox,
// through `run`.
import { createActor, type AnyEventObject } from 'xstate';
import { RuntimeStoppedError } from '../errors.ts';
import { RESUMED, type ActorKindContext, type ResumeMode, type ResumedEvent } from '../kinds.ts';
import type { ActorDoc, ActorView } from '../record.ts';
import type { AnyActor, Entry, Resources } from '../resources.ts';
import type { ResidencyPort, Systems } from './index.ts';

export class Residency implements ResidencyPort {
  constructor(
    private readonly res: Resources,
    private readonly sys: Systems,
  ) {}

  /**
   * Replaces the in-memory actor with one restored from `doc` (or started from its input when the
   * spawn never wrote a snapshot), then sends a restored one `runtime.resumed` with `mode`. The
   * caller persists.
   */
  load(entry: Entry, doc: ActorDoc, mode: ResumeMode = 'resume'): void {
    if (entry.actor) this.unload(entry, { keepResources: true });
    const { kind } = entry;
    const ctx: ActorKindContext = {
      kind: kind.kind,
      id: entry.id,
      logger: entry.log,
      lease: () => this.sys.leases.scope(entry),
      steps: { once: (step, work) => this.sys.steps.once(entry, step, work), done: (step) => this.sys.steps.done(entry, step) },
      resources: () => entry.resources,
    };
    const implementations = kind.provide?.(ctx);
    const machine = implementations ? kind.machine.provide(implementations) : kind.machine;
    let actor: AnyActor;
    if (doc.snapshot === null) {
      actor = createActor(machine, { input: doc.input === null ? undefined : JSON.parse(doc.input) });
    } else {
      let persisted: unknown = JSON.parse(doc.snapshot);
      if (doc.version !== kind.version) {
        if (kind.migrate) persisted = kind.migrate(persisted, doc.version);
        else entry.log.warn({ stored_version: doc.version, version: kind.version }, 'restoring a snapshot of another machine version');
      }
      actor = createActor(machine, { snapshot: persisted as never });
    }
    entry.actor = actor;
    entry.doc = doc;
    entry.inboxApplied = doc.inbox_applied ?? 0;
    entry.subscription = actor.subscribe({
      next: () => this.sys.persistence.changed(entry, actor),
      error: (err: unknown) => {
        entry.log.error({ err }, 'actor failed');
        this.sys.persistence.changed(entry, actor);
      },
    });
    actor.on('*', (emitted: AnyEventObject) => {
      if (entry.actor === actor && entry.emitted) entry.emitted.push(emitted);
    });
    this.quietly(entry, () => actor.start());
    if (doc.snapshot !== null && actor.getSnapshot().status === 'active') {
      // Restoring lost the `after` timers: let the machine re-arm its deadlines from context.
      const resumed: ResumedEvent = { type: RESUMED, now: this.res.now(), mode };
      this.quietly(entry, () => actor.send(resumed));
    }
    // A fresh start, a resume or a failed restore changed what is stored; the caller writes it.
    entry.dirty = true;
    entry.urgent = true;
    this.capMemory();
  }

  /** Forgets the in-memory copy after another writer was detected; the next use reloads. */
  drop(entry: Entry, reason: string): void {
    entry.log.warn({ reason, revision: entry.doc?.rev }, 'actor dropped from memory');
    this.unload(entry);
    entry.doc = null;
  }

  /** Stops the in-memory actor, ends its lease scope and (unless kept for a reload) disposes its resources. */
  unload(entry: Entry, opts: { keepResources?: boolean } = {}): void {
    const actor = entry.actor;
    entry.actor = null;
    entry.dirty = false;
    entry.urgent = false;
    entry.subscription?.unsubscribe();
    entry.subscription = null;
    if (entry.evictTimer) clearTimeout(entry.evictTimer);
    entry.evictTimer = null;
    this.sys.persistence.cancel(entry, new RuntimeStoppedError());
    if (!opts.keepResources) this.sys.leases.forget(entry);
    actor?.stop();
    if (!opts.keepResources && entry.resources) {
      const resources = entry.resources;
      entry.resources = null;
      try {
        const disposed = resources.dispose?.();
        if (disposed) disposed.catch((err: unknown) => entry.log.warn({ err }, 'actor resources failed to dispose'));
      } catch (err) {
        entry.log.warn({ err }, 'actor resources failed to dispose');
      }
    }
  }

  quietly(entry: Entry, fn: () => void): void {
    entry.quiet = true;
    try {
      fn();
    } finally {
      entry.quiet = false;
    }
  }

  /** Runs `task` in the actor's mailbox, then lets an idle actor be evicted later. */
  run<T>(entry: Entry, task: () => Promise<T>): Promise<T> {
    if (entry.evictTimer) clearTimeout(entry.evictTimer);
    entry.evictTimer = null;
    const result = entry.mailbox.enqueue(() => {
      if (this.res.state === 'stopped') throw new RuntimeStoppedError();
      return task();
    });
    const settle = () => this.idle(entry);
    result.then(settle, settle);
    return result;
  }

  private idle(entry: Entry): void {
    entry.lastUsed = this.res.now();
    if (entry.mailbox.pending > 0 || this.res.state !== 'running' || this.res.entries.get(entry.key) !== entry) return;
    if (!entry.actor) {
      if (!entry.resources) this.res.entries.delete(entry.key);
      return;
    }
    if (this.custodial(entry)) return; // its timers and promises need it in memory
    if (entry.evictTimer) clearTimeout(entry.evictTimer);
    entry.evictTimer = setTimeout(() => {
      entry.evictTimer = null;
      this.evict(entry);
    }, entry.kind.idleEvictMs ?? this.res.idleEvictMs);
    entry.evictTimer.unref();
  }

  /** Whether the actor as stored needs an owner (not final, not in an 'idle'-tagged state). */
  custodial(entry: Entry): boolean {
    return entry.doc?.custodial === true && entry.owned;
  }

  evict(entry: Entry): boolean {
    if (entry.mailbox.pending > 0 || this.custodial(entry) || entry.dirty || entry.resources) return false;
    this.unload(entry);
    if (this.res.entries.get(entry.key) === entry) this.res.entries.delete(entry.key);
    return true;
  }

  /** Past maxInMemory, evicts the least recently used idle non-custodial actors. */
  private capMemory(): void {
    let loaded = 0;
    for (const entry of this.res.entries.values()) if (entry.actor) loaded += 1;
    if (loaded <= this.res.maxInMemory) return;
    const candidates = [...this.res.entries.values()]
      .filter((entry) => entry.actor && !this.custodial(entry) && entry.mailbox.pending === 0)
      .sort((a, b) => a.lastUsed - b.lastUsed);
    for (const entry of candidates) {
      if (loaded <= this.res.maxInMemory) return;
      if (this.evict(entry)) loaded -= 1;
    }
    this.res.log.warn({ loaded, max: this.res.maxInMemory }, 'actors in memory above the cap (custodial or busy)');
  }

  /** The view of the in-memory actor (its context is live: read, never mutate). */
  view(entry: Entry): ActorView {
    const snap = entry.actor!.getSnapshot();
    const doc = entry.doc!;
    return {
      kind: doc.kind,
      id: doc.actor_id,
      value: snap.value,
      status: snap.status,
      context: snap.context,
      ...(snap.output !== undefined ? { output: snap.output } : {}),
      revision: doc.rev,
      version: entry.kind.version,
      owner: doc.owner,
      lease_until: doc.lease_until,
      updated_at: doc.updated_at,
    };
  }
}
