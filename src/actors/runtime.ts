// The actor runtime: every long-lived thing of the gateway (a realtime socket, a transcription job,
// a webhook endpoint, an intent session) is an XState actor persisted in the `actors` collection.
//
// - One mailbox per actor: events, internal snapshot changes (an invoked promise settling, a
//   delayed transition) and evictions run one at a time, and every change is written before the
//   next task starts. Each write is conditional on the revision it read and on this instance
//   owning the actor: a mismatch is someone else's write, so the in-memory actor is dropped
//   (RevisionConflictError), never written over.
// - Ownership: an actor that is neither final nor in a state tagged 'idle' is "custodial": its
//   progress depends on timers and promises running in memory, so exactly one instance holds it,
//   under a lease renewed by a heartbeat. Other actors hold no lease between events; each event
//   takes the lease for the time it is processed and reloads the actor if its revision moved.
// - Resume: restoring a snapshot re-runs in-flight invoked promises but loses `after` timers, so
//   after every restore the actor gets `{ type: 'runtime.resumed', now }` and re-arms the
//   deadlines it keeps in context. `start()` resumes this instance's (and unowned) custodial
//   actors; a periodic sweep takes over those whose owner's lease expired.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { createActor, type Actor, type AnyEventObject, type AnyStateMachine, type Subscription } from 'xstate';
import { isDuplicateKeyError, type Collection, type Filter, type Store } from '../store/port.ts';
import { ActorBusyError, ActorNotFoundError, RevisionConflictError, RuntimeStoppedError, UnknownActorKindError } from './errors.ts';
import { Mailbox } from './mailbox.ts';
import { ACTORS, actorKey, toView, type ActorDoc, type ActorView } from './record.ts';

/** The event every restored actor receives; `now` is epoch ms. */
export const RESUMED = 'runtime.resumed';
export type ResumedEvent = { type: typeof RESUMED; now: number };

export interface ActorKindContext {
  kind: string;
  id: string;
  logger: Logger;
}

export interface ActorKind<TMachine extends AnyStateMachine = AnyStateMachine> {
  kind: string;
  machine: TMachine;
  /** The machine's `version`: stored with every snapshot. */
  version: number;
  /** The real effects of one actor, given to `machine.provide(...)`. */
  provide?: (ctx: ActorKindContext) => Parameters<TMachine['provide']>[0];
  /** Turns a persisted snapshot written by an older machine version into one this version restores. */
  migrate?: (persisted: unknown, fromVersion: number) => unknown;
  /** How long a non-custodial actor stays in memory without events; default: the runtime's. */
  idleEvictMs?: number;
  /**
   * Retention, applied by the sweep; unset means kept forever. A finished (or failed) actor of this
   * kind is deleted `retainFinishedMs` after its last change. An actor waiting in an 'idle' state is
   * deleted after `expireIdleMs` without change (for kinds whose idle actors are disposable, such
   * as conversation sessions; never for ones holding state that matters, such as webhook
   * endpoints). A later message for a deleted actor's id finds no actor.
   */
  retainFinishedMs?: number;
  expireIdleMs?: number;
}

export interface ActorRuntimeOptions {
  store: Store;
  logger: Logger;
  /** Unique per process sharing the store; a restarted process may reuse its id. */
  instanceId: string;
  /** Lease length; renewed every leaseMs/3, expired leases swept every leaseMs/2. Default 15 s. */
  leaseMs?: number;
  /** How long an event waits for another instance's lease before ActorBusyError. Default 5 s. */
  leaseWaitMs?: number;
  /** Default idle eviction delay of kinds that set none. Default 60 s. */
  idleEvictMs?: number;
  /** Soft cap of actors in memory: past it, the least recently used non-custodial ones go. Default 10 000. */
  maxInMemory?: number;
  /** Epoch ms; leases, timestamps and `runtime.resumed` use it (tests inject a clock). */
  now?: () => number;
}

export type ActorListener = (view: ActorView) => void;

type AnyActor = Actor<AnyStateMachine>;

interface Entry {
  readonly key: string;
  readonly id: string;
  readonly kind: ActorKind;
  readonly log: Logger;
  readonly mailbox: Mailbox;
  /** The running actor, or null when not loaded (evicted, dropped, finished, never loaded). */
  actor: AnyActor | null;
  subscription: Subscription | null;
  /** The stored document as last read or written by this instance (`rev` included). */
  doc: ActorDoc | null;
  /** This instance is the stored owner (custodial actors between events; any actor during one). */
  owned: boolean;
  /** When the lease this instance holds ends (epoch ms); 0 when unknown. */
  leaseUntil: number;
  /** The actor's snapshot changed since it was last written. */
  dirty: boolean;
  /** Set while the runtime itself drives the actor (start, send, stop): it writes afterwards. */
  quiet: boolean;
  persistQueued: boolean;
  evictTimer: NodeJS.Timeout | null;
  lastUsed: number;
}

const PAGE = 200;

export class ActorRuntime {
  private readonly kinds = new Map<string, ActorKind>();
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Map<string, Set<ActorListener>>();
  private readonly background = new Set<Promise<unknown>>();
  private readonly actors: Collection<ActorDoc>;
  private readonly log: Logger;
  private readonly me: string;
  private readonly leaseMs: number;
  private readonly leaseWaitMs: number;
  private readonly idleEvictMs: number;
  private readonly maxInMemory: number;
  private readonly now: () => number;
  private state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeping = false;
  private beating = false;

  constructor(opts: ActorRuntimeOptions) {
    this.actors = opts.store.collection<ActorDoc>(ACTORS);
    this.log = opts.logger;
    this.me = opts.instanceId;
    this.leaseMs = opts.leaseMs ?? 15_000;
    this.leaseWaitMs = opts.leaseWaitMs ?? 5_000;
    this.idleEvictMs = opts.idleEvictMs ?? 60_000;
    this.maxInMemory = opts.maxInMemory ?? 10_000;
    this.now = opts.now ?? Date.now;
  }

  register<TMachine extends AnyStateMachine>(kind: ActorKind<TMachine>): void {
    if (this.kinds.has(kind.kind)) throw new Error(`actor kind ${kind.kind} is already registered`);
    if (kind.kind.includes(':')) throw new Error(`actor kind ${kind.kind} must not contain ':'`);
    this.kinds.set(kind.kind, kind as unknown as ActorKind);
  }

  /** Creates the indexes, resumes the custodial actors left by this instance or nobody, starts the timers. */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`actor runtime cannot start: it is ${this.state}`);
    await this.actors.createIndex({ keys: { custodial: 1, lease_until: 1 } });
    await this.actors.createIndex({ keys: { owner: 1 } });
    await this.actors.createIndex({ keys: { kind: 1, custodial: 1, updated_at: 1 } });
    this.state = 'running';
    await this.resumeWhere({ $or: [{ owner: null }, { owner: this.me }, { lease_until: { $lte: new Date(this.now()) } }] });
    this.heartbeatTimer = setInterval(() => this.inBackground(this.heartbeat()), Math.max(1, this.leaseMs / 3));
    this.heartbeatTimer.unref();
    this.sweepTimer = setInterval(() => this.inBackground(this.sweep()), Math.max(1, this.leaseMs / 2));
    this.sweepTimer.unref();
  }

  /** Stops accepting, drains every mailbox, releases the leases and stops the actors. */
  async stop(): Promise<void> {
    if (this.state !== 'running') return;
    this.state = 'stopping';
    this.clearTimers();
    await Promise.allSettled([...this.background]);
    await Promise.allSettled(
      [...this.entries.values()].map((entry) =>
        entry.mailbox.enqueue(async () => {
          const owned = entry.owned;
          this.unload(entry);
          if (owned) {
            await this.actors.updateOne({ _id: entry.key, owner: this.me }, { $set: { owner: null, lease_until: null } });
          }
        }),
      ),
    );
    this.entries.clear();
    this.listeners.clear();
    this.state = 'stopped';
  }

  /**
   * Simulates a crash (tests): stops the timers and the in-memory actors without writing anything,
   * so this instance's leases stay in the store until they expire.
   */
  abandon(): void {
    this.state = 'stopped';
    this.clearTimers();
    for (const entry of this.entries.values()) this.unload(entry);
    this.entries.clear();
    this.listeners.clear();
  }

  /** Creates and persists the actor unless it exists; either way resolves with its view. */
  async spawn(kind: string, id: string, input?: unknown): Promise<ActorView> {
    const entry = this.entryFor(kind, id);
    return this.run(entry, async () => {
      if (entry.actor && entry.doc) return toView(entry.doc);
      const existing = await this.actors.findOne({ _id: entry.key });
      if (existing) return toView(existing);
      const now = this.now();
      const doc: ActorDoc = {
        _id: entry.key,
        kind: entry.kind.kind,
        actor_id: id,
        version: entry.kind.version,
        rev: 0,
        status: 'active',
        value: null,
        snapshot: null,
        input: input === undefined ? null : JSON.stringify(input),
        // Until the first write, the claim is custodial: a crash here is resumed from `input`.
        custodial: true,
        owner: this.me,
        lease_until: new Date(now + this.leaseMs),
        created_at: new Date(now),
        updated_at: new Date(now),
      };
      try {
        await this.actors.insertOne(doc);
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
        const raced = await this.actors.findOne({ _id: entry.key });
        if (!raced) throw err;
        return toView(raced);
      }
      entry.owned = true;
      entry.leaseUntil = now + this.leaseMs;
      this.load(entry, doc);
      return this.persist(entry);
    });
  }

  /**
   * Processes one event after the ones already queued for this actor; resolves with the view once
   * the resulting snapshot is stored. An actor that is done or failed ignores events (see `status`).
   */
  async send(kind: string, id: string, event: AnyEventObject): Promise<ActorView> {
    const entry = this.entryFor(kind, id);
    return this.run(entry, async () => {
      const finished = await this.own(entry);
      if (finished) return toView(finished);
      const actor = entry.actor!;
      if (actor.getSnapshot().status === 'active') {
        this.quietly(entry, () => actor.send(event));
        return this.persist(entry);
      }
      return entry.dirty ? this.persist(entry) : toView(entry.doc!);
    });
  }

  /** The stored view, whoever owns the actor. */
  async get(kind: string, id: string): Promise<ActorView> {
    const doc = await this.actors.findOne({ _id: actorKey(kind, id) });
    if (!doc) throw new ActorNotFoundError(kind, id);
    return toView(doc);
  }

  /** Calls `listener` with the view after every change this instance stores; returns the unsubscribe. */
  subscribe(kind: string, id: string, listener: ActorListener): () => void {
    const key = actorKey(kind, id);
    let set = this.listeners.get(key);
    if (!set) {
      set = new Set();
      this.listeners.set(key, set);
    }
    set.add(listener);
    return () => {
      const current = this.listeners.get(key);
      current?.delete(listener);
      if (current?.size === 0) this.listeners.delete(key);
    };
  }

  /** Whether the actor is running in this instance's memory (tests, metrics). */
  isLoaded(kind: string, id: string): boolean {
    return this.entries.get(actorKey(kind, id))?.actor != null;
  }

  /** Takes over the custodial actors nobody holds (released, or lease expired). Runs every leaseMs/2. */
  async sweep(): Promise<void> {
    if (this.state !== 'running' || this.sweeping) return;
    this.sweeping = true;
    try {
      await this.resumeWhere({ $or: [{ owner: null }, { lease_until: { $lte: new Date(this.now()) } }] });
      await this.expire();
    } finally {
      this.sweeping = false;
    }
  }

  /** Deletes, per kind, the finished and the expired idle actors its retention names (a page each a sweep). */
  private async expire(): Promise<void> {
    for (const kind of this.kinds.values()) {
      if (kind.retainFinishedMs !== undefined) {
        await this.deleteStale({ kind: kind.kind, status: { $in: ['done', 'error'] }, updated_at: { $lt: new Date(this.now() - kind.retainFinishedMs) } });
      }
      if (kind.expireIdleMs !== undefined) {
        await this.deleteStale({ kind: kind.kind, status: 'active', custodial: false, updated_at: { $lt: new Date(this.now() - kind.expireIdleMs) } });
      }
    }
  }

  private async deleteStale(filter: Filter): Promise<void> {
    const stale = await this.actors.find(filter, { limit: 500, projection: { _id: 1, rev: 1 } });
    for (const doc of stale) {
      const entry = this.entries.get(doc._id);
      // A copy in memory that is busy, owned or unsaved is in use: leave it for a later sweep.
      if (entry && !this.evict(entry)) continue;
      // Conditional on the revision: an actor that moved since it was read is not deleted.
      await this.actors.deleteOne({ _id: doc._id, rev: doc.rev, custodial: false });
    }
  }

  // --- ownership and resume ------------------------------------------------------------------

  /**
   * Makes this instance the owner of the actor and its in-memory copy current. Returns the stored
   * document instead when the actor is finished (nothing to own), throws ActorNotFoundError, or
   * ActorBusyError when another live instance keeps the lease longer than leaseWaitMs.
   */
  private async own(entry: Entry): Promise<ActorDoc | null> {
    if (entry.actor && entry.owned && entry.leaseUntil > this.now()) return null;
    const giveUpAt = performance.now() + this.leaseWaitMs;
    for (let backoff = 10; ; backoff = Math.min(backoff * 2, 200)) {
      const doc = (await this.acquire(entry, {}))?.doc;
      if (doc) {
        if (!entry.actor || entry.doc?.rev !== doc.rev) this.load(entry, doc);
        else entry.doc = doc;
        return null;
      }
      const current = await this.actors.findOne({ _id: entry.key });
      if (!current) throw new ActorNotFoundError(entry.kind.kind, entry.id);
      if (current.status !== 'active') {
        if (entry.actor) this.unload(entry);
        entry.doc = current;
        return current;
      }
      // Someone else holds it: whatever this instance still has in memory is stale.
      if (entry.actor) this.drop(entry, `owned by ${current.owner}`);
      const left = giveUpAt - performance.now();
      if (left <= 0) throw new ActorBusyError(entry.kind.kind, entry.id, current.owner);
      await sleep(Math.min(backoff, left)); // ref'd on purpose: a caller is waiting on it
    }
  }

  /** The atomic lease grab of an active actor: free, expired or already ours. */
  private async acquire(entry: Entry, extra: Filter): Promise<{ doc: ActorDoc; previousOwner: string | null } | null> {
    const now = this.now();
    const lease = { owner: this.me, lease_until: new Date(now + this.leaseMs) };
    const before = await this.actors.findOneAndUpdate(
      {
        _id: entry.key,
        status: 'active',
        ...extra,
        $or: [{ owner: this.me }, { owner: null }, { lease_until: { $lte: new Date(now) } }],
      },
      { $set: lease },
      { returnDocument: 'before' },
    );
    if (!before) return null;
    entry.owned = true;
    entry.leaseUntil = now + this.leaseMs;
    return { doc: { ...before, ...lease }, previousOwner: before.owner };
  }

  /** Restores (and resumes) the custodial actors matching `filter` that this instance can take. */
  private async resumeWhere(filter: Filter): Promise<void> {
    let after: string | null = null;
    for (;;) {
      const page: ActorDoc[] = await this.actors.find(
        { custodial: true, status: 'active', ...filter, ...(after === null ? {} : { _id: { $gt: after } }) },
        { sort: { _id: 1 }, limit: PAGE, projection: { _id: 1, kind: 1, actor_id: 1 } },
      );
      const takeovers = page
        .filter((doc) => this.kinds.has(doc.kind))
        .map((doc) => {
          const entry = this.entryFor(doc.kind, doc.actor_id);
          return this.run(entry, () => this.takeOver(entry)).catch((err: unknown) => {
            entry.log.warn({ err }, 'actor resume failed');
          });
        });
      await Promise.all(takeovers);
      if (page.length < PAGE) return;
      after = page[page.length - 1]!._id;
    }
  }

  private async takeOver(entry: Entry): Promise<void> {
    const acquired = await this.acquire(entry, { custodial: true });
    if (!acquired) return; // taken by someone else, or finished, meanwhile
    const { doc, previousOwner } = acquired;
    if (entry.actor && entry.doc?.rev === doc.rev) {
      entry.doc = doc; // already running here: the grab only renewed the lease
      return;
    }
    this.load(entry, doc);
    entry.log.info({ previous_owner: previousOwner, revision: doc.rev }, 'actor resumed');
    await this.persist(entry);
  }

  private async heartbeat(): Promise<void> {
    const held = [...this.entries.values()].filter((entry) => entry.actor && entry.owned);
    if (this.state !== 'running' || this.beating || held.length === 0) return;
    this.beating = true;
    try {
      const until = this.now() + this.leaseMs;
      const result = await this.actors.updateMany(
        { _id: { $in: held.map((entry) => entry.key) }, owner: this.me },
        { $set: { lease_until: new Date(until) } },
      );
      // A lease lost to another instance is found (and the copy dropped) by the next acquire.
      const allHeld = result.matchedCount === held.length;
      for (const entry of held) entry.leaseUntil = allHeld ? until : 0;
    } finally {
      this.beating = false;
    }
  }

  // --- in-memory actors ----------------------------------------------------------------------

  /**
   * Replaces the in-memory actor with one restored from `doc` (or started from its input when the
   * spawn never wrote a snapshot), then sends it `runtime.resumed`. The caller persists.
   */
  private load(entry: Entry, doc: ActorDoc): void {
    if (entry.actor) this.unload(entry);
    const { kind } = entry;
    const implementations = kind.provide?.({ kind: kind.kind, id: entry.id, logger: entry.log });
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
    entry.subscription = actor.subscribe({
      next: () => this.changed(entry, actor),
      error: (err: unknown) => {
        entry.log.error({ err }, 'actor failed');
        this.changed(entry, actor);
      },
    });
    this.quietly(entry, () => actor.start());
    if (doc.snapshot !== null && actor.getSnapshot().status === 'active') {
      // Restoring lost the `after` timers: let the machine re-arm its deadlines from context.
      const resumed: ResumedEvent = { type: RESUMED, now: this.now() };
      this.quietly(entry, () => actor.send(resumed));
    }
    // A fresh start, a resume or a failed restore changed what is stored; the caller writes it.
    entry.dirty = true;
    this.capMemory();
  }

  /** A snapshot change: from an event the runtime sent (written by that task) or from inside the actor. */
  private changed(entry: Entry, actor: AnyActor): void {
    if (entry.actor !== actor) return;
    entry.dirty = true;
    if (entry.quiet || entry.persistQueued) return;
    entry.persistQueued = true;
    const task = this.run(entry, async () => {
      entry.persistQueued = false;
      if (entry.actor !== actor || !entry.dirty) return;
      // Not held (against the 'idle' tag contract): take it; a newer stored copy replaces this one.
      if (!entry.owned) await this.own(entry);
      if (entry.actor && entry.dirty) await this.persist(entry);
    });
    task.catch((err: unknown) => entry.log.warn({ err }, 'actor change not persisted'));
  }

  /** Writes the current snapshot, conditional on revision and ownership; returns the new view. */
  private async persist(entry: Entry): Promise<ActorView> {
    const actor = entry.actor!;
    const prev = entry.doc!;
    const snap = actor.getSnapshot();
    const now = this.now();
    const custodial = snap.status === 'active' && !snap.hasTag('idle');
    const set: Partial<ActorDoc> = {
      version: entry.kind.version,
      status: snap.status,
      custodial,
      owner: custodial ? this.me : null,
      lease_until: custodial ? new Date(now + this.leaseMs) : null,
      updated_at: new Date(now),
    };
    if (snap.status === 'error') {
      // Keep the last good snapshot for inspection; the error snapshot itself cannot be restored.
      set.error = snap.error instanceof Error ? snap.error.message : String(snap.error);
    } else {
      set.value = snap.value;
      set.snapshot = JSON.stringify(actor.getPersistedSnapshot());
    }
    entry.dirty = false;
    const result = await this.actors.updateOne({ _id: entry.key, rev: prev.rev, owner: this.me }, { $set: set, $inc: { rev: 1 } });
    if (result.matchedCount === 0) {
      this.drop(entry, 'revision conflict');
      throw new RevisionConflictError(entry.kind.kind, entry.id, prev.rev);
    }
    const doc: ActorDoc = { ...prev, ...set, rev: prev.rev + 1 };
    entry.doc = doc;
    entry.owned = custodial;
    entry.leaseUntil = custodial ? now + this.leaseMs : 0;
    if (snap.status !== 'active') this.unload(entry);
    const view = toView(doc);
    for (const listener of this.listeners.get(entry.key) ?? []) {
      try {
        listener(view);
      } catch (err) {
        entry.log.error({ err }, 'actor listener threw');
      }
    }
    return view;
  }

  /** Forgets the in-memory copy after another writer was detected; the next use reloads. */
  private drop(entry: Entry, reason: string): void {
    entry.log.warn({ reason, revision: entry.doc?.rev }, 'actor dropped from memory');
    this.unload(entry);
    entry.doc = null;
  }

  private unload(entry: Entry): void {
    const actor = entry.actor;
    entry.actor = null;
    entry.owned = false;
    entry.leaseUntil = 0;
    entry.dirty = false;
    entry.subscription?.unsubscribe();
    entry.subscription = null;
    if (entry.evictTimer) clearTimeout(entry.evictTimer);
    entry.evictTimer = null;
    actor?.stop();
  }

  private quietly(entry: Entry, fn: () => void): void {
    entry.quiet = true;
    try {
      fn();
    } finally {
      entry.quiet = false;
    }
  }

  // --- mailboxes and memory ------------------------------------------------------------------

  private entryFor(kindName: string, id: string): Entry {
    if (this.state !== 'running') throw new RuntimeStoppedError();
    const kind = this.kinds.get(kindName);
    if (!kind) throw new UnknownActorKindError(kindName);
    const key = actorKey(kindName, id);
    let entry = this.entries.get(key);
    if (!entry) {
      entry = {
        key,
        id,
        kind,
        log: this.log.child({ actor_kind: kindName, actor_id: id }),
        mailbox: new Mailbox(),
        actor: null,
        subscription: null,
        doc: null,
        owned: false,
        leaseUntil: 0,
        dirty: false,
        quiet: false,
        persistQueued: false,
        evictTimer: null,
        lastUsed: this.now(),
      };
      this.entries.set(key, entry);
    }
    return entry;
  }

  /** Runs `task` in the actor's mailbox, then lets an idle actor be evicted later. */
  private run<T>(entry: Entry, task: () => Promise<T>): Promise<T> {
    if (entry.evictTimer) clearTimeout(entry.evictTimer);
    entry.evictTimer = null;
    const result = entry.mailbox.enqueue(() => {
      if (this.state === 'stopped') throw new RuntimeStoppedError();
      return task();
    });
    const settle = () => this.idle(entry);
    result.then(settle, settle);
    return result;
  }

  private idle(entry: Entry): void {
    entry.lastUsed = this.now();
    if (entry.mailbox.pending > 0 || this.state !== 'running' || this.entries.get(entry.key) !== entry) return;
    if (!entry.actor) {
      this.entries.delete(entry.key);
      return;
    }
    if (entry.owned) return; // custodial: its timers and promises need it in memory
    if (entry.evictTimer) clearTimeout(entry.evictTimer);
    entry.evictTimer = setTimeout(() => {
      entry.evictTimer = null;
      this.evict(entry);
    }, entry.kind.idleEvictMs ?? this.idleEvictMs);
    entry.evictTimer.unref();
  }

  private evict(entry: Entry): boolean {
    if (entry.mailbox.pending > 0 || entry.owned || entry.dirty) return false;
    this.unload(entry);
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
    return true;
  }

  /** Past maxInMemory, evicts the least recently used idle non-custodial actors. */
  private capMemory(): void {
    let loaded = 0;
    for (const entry of this.entries.values()) if (entry.actor) loaded += 1;
    if (loaded <= this.maxInMemory) return;
    const candidates = [...this.entries.values()]
      .filter((entry) => entry.actor && !entry.owned && entry.mailbox.pending === 0)
      .sort((a, b) => a.lastUsed - b.lastUsed);
    for (const entry of candidates) {
      if (loaded <= this.maxInMemory) return;
      if (this.evict(entry)) loaded -= 1;
    }
    this.log.warn({ loaded, max: this.maxInMemory }, 'actors in memory above the cap (custodial or busy)');
  }

  private inBackground(work: Promise<unknown>): void {
    const tracked = work.catch((err: unknown) => this.log.warn({ err }, 'actor runtime background task failed'));
    this.background.add(tracked);
    void tracked.finally(() => this.background.delete(tracked));
  }

  private clearTimers(): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.heartbeatTimer = null;
    this.sweepTimer = null;
    for (const entry of this.entries.values()) {
      if (entry.evictTimer) clearTimeout(entry.evictTimer);
      entry.evictTimer = null;
    }
  }
}
