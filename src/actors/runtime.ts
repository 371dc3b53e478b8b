// The actor runtime: every long-lived thing of the gateway (a realtime socket, a transcription job,
// a webhook endpoint, an intent session) is an XState actor persisted in the `actors` collection.
// This file is the facade; the work is done by small systems over one shared Resources object
// (src/actors/systems/): residency (memory, mailboxes, resources), leases (one owner, epochs,
// abort signals), persistence (policies, conditional writes, projections, size), inbox (messages
// across instances, exactly once, in order), steps (once-only side effects, fenced by epoch),
// claims (taking orphaned or queued actors up to a kind's capacity) and retention.
//
// - One mailbox per actor: events, internal changes and evictions run one at a time.
// - Ownership: a custodial actor (not final, not in a state tagged 'idle') is held by one
//   instance under a lease renewed by a heartbeat; an idle one is held for a short grace after
//   each write, then by nobody, and whoever gets the next event takes it. An event for an actor
//   held by another live instance goes to its inbox.
// - Resume: restoring a snapshot re-runs in-flight invoked promises but loses `after` timers, so
//   after every restore the actor gets `{ type: 'runtime.resumed', now, mode }` and re-arms the
//   deadlines it keeps in context (`mode: 'finalize'` when the resources it lived on are gone).
import { initialTransition, type AnyEventObject, type AnyStateMachine } from 'xstate';
import type { Filter, Sort } from '../store/port.ts';
import { ActorNotFoundError, NoReplyError, RuntimeStoppedError, SnapshotTooLargeError, UnknownActorKindError } from './errors.ts';
import { projectedField, projectedFields, type ActorKind, type ActorResources, type KindEvent, type Projected, type ResumedEvent } from './kinds.ts';
import { actorKey, checkActorId, toView, type ActorDoc, type ActorView } from './record.ts';
import { Resources, type Entry, type RuntimeOptions } from './resources.ts';
import { Claims } from './systems/claims.ts';
import type { Systems } from './systems/index.ts';
import { InboxSystem } from './systems/inbox.ts';
import { Leases } from './systems/leases.ts';
import { Persistence } from './systems/persistence.ts';
import { Residency } from './systems/residency.ts';
import { Retention } from './systems/retention.ts';
import { Steps } from './systems/steps.ts';

export { RESUMED, type ActorKind, type ActorKindContext, type ResumedEvent } from './kinds.ts';
export type ActorRuntimeOptions = RuntimeOptions;
export type ActorListener = (view: ActorView) => void;

export interface SendOptions {
  /**
   * What the returned promise waits for: 'applied' (the transition ran; the write follows by the
   * kind's policy), 'durable' (the resulting snapshot is stored; the default), or 'accepted' (as
   * 'applied' when this instance holds the actor; for one held elsewhere, the message is stored in
   * its inbox and will be applied once, in order: resolves with the stored view as it was).
   */
  wait?: 'applied' | 'durable' | 'accepted';
  /** How long to wait for an actor held by another instance to apply it (then ActorBusyError). Default: leaseWaitMs. */
  timeoutMs?: number;
}

export interface Reply<E extends AnyEventObject = AnyEventObject> {
  /** The first event the transition emitted (`emit` in the machine). */
  reply: E;
  view: ActorView;
}

export interface ListOptions {
  sort?: Record<string, 1 | -1>;
  limit?: number;
}

/** A listed actor: its projection, without opening the snapshot. */
export interface ActorSummary {
  id: string;
  status: ActorDoc['status'];
  value: ActorDoc['value'];
  projection: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

/** A typed handle on one actor of one kind. */
export interface ActorRef<K extends ActorKind> {
  send(event: KindEvent<K>, opts?: SendOptions): Promise<ActorView>;
  ask<E extends AnyEventObject = AnyEventObject>(event: KindEvent<K>, opts?: SendOptions): Promise<Reply<E>>;
  sendOrSpawn(input: unknown, event: KindEvent<K>, opts?: SendOptions): Promise<ActorView>;
  askOrSpawn<E extends AnyEventObject = AnyEventObject>(input: unknown, event: KindEvent<K>, opts?: SendOptions): Promise<Reply<E>>;
  spawn(input?: unknown, opts?: { resources?: ActorResources }): Promise<ActorView>;
  get(): Promise<ActorView>;
}

export class ActorRuntime {
  private readonly res: Resources;
  private readonly sys: Systems;
  private readonly background = new Set<Promise<unknown>>();
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private sweeping = false;

  constructor(opts: ActorRuntimeOptions) {
    this.res = new Resources(opts);
    const sys = {} as Systems;
    sys.residency = new Residency(this.res, sys);
    sys.leases = new Leases(this.res, sys);
    sys.persistence = new Persistence(this.res, sys);
    sys.inbox = new InboxSystem(this.res, sys);
    sys.steps = new Steps(this.res, sys);
    sys.claims = new Claims(this.res, sys);
    sys.retention = new Retention(this.res, sys);
    sys.claims.onFreed = () => this.inBackground(this.claim());
    this.sys = sys;
  }

  register<TMachine extends AnyStateMachine, R extends ActorResources>(kind: ActorKind<TMachine, R>): void {
    if (this.res.kinds.has(kind.kind)) throw new Error(`actor kind ${kind.kind} is already registered`);
    if (kind.kind.includes(':')) throw new Error(`actor kind ${kind.kind} must not contain ':'`);
    this.res.kinds.set(kind.kind, kind);
  }

  /** A typed handle on actor `id` of `kind` (the kind object registered with this runtime). */
  // biome-ignore lint/suspicious/noExplicitAny: any kind, whatever its machine and resources (unknown would not accept a kind's provide)
  ref<K extends ActorKind<any, any>>(kind: K, id: string): ActorRef<K> {
    return {
      send: (event, opts) => this.send(kind.kind, id, event as AnyEventObject, opts),
      ask: (event, opts) => this.ask(kind.kind, id, event as AnyEventObject, opts),
      sendOrSpawn: (input, event, opts) => this.sendOrSpawn(kind.kind, id, input, event as AnyEventObject, opts),
      askOrSpawn: (input, event, opts) => this.askOrSpawn(kind.kind, id, input, event as AnyEventObject, opts),
      spawn: (input, opts) => this.spawn(kind.kind, id, input, opts),
      get: () => this.get(kind.kind, id),
    };
  }

  /** Creates the indexes, resumes the custodial actors left by this instance or nobody, starts the timers. */
  async start(): Promise<void> {
    if (this.res.state !== 'new') throw new Error(`actor runtime cannot start: it is ${this.res.state}`);
    const { actors, inbox, steps } = this.res;
    await actors.createIndex({ keys: { custodial: 1, lease_until: 1 } });
    await actors.createIndex({ keys: { owner: 1 } });
    await actors.createIndex({ keys: { kind: 1, custodial: 1, updated_at: 1 } });
    await inbox.createIndex({ keys: { key: 1, seq: 1 } });
    await inbox.createIndex({ keys: { status: 1, created_at: 1 } });
    await steps.createIndex({ keys: { key: 1 } });
    for (const kind of this.res.kinds.values()) {
      for (const keys of kind.indexes ?? []) {
        const fields: Record<string, 1 | -1> = { kind: 1 };
        for (const [name, dir] of Object.entries(keys)) fields[projectedField(name)] = dir;
        await actors.createIndex({ keys: fields });
      }
    }
    this.res.state = 'running';
    this.sys.inbox.start();
    await this.sys.claims.claimWhere({ $or: [{ owner: null }, { owner: this.res.me }, { lease_until: { $lte: new Date(this.res.now()) } }] });
    await this.sys.inbox.poll();
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const timer = setInterval(() => this.inBackground(fn()), Math.max(1, ms));
      timer.unref();
      return timer;
    };
    this.heartbeatTimer = every(this.res.leaseMs / 3, () => this.sys.leases.heartbeat());
    this.sweepTimer = every(this.res.leaseMs / 2, () => this.sweep());
    this.pollTimer = every(this.res.inboxPollMs, () => (this.res.state === 'running' ? this.sys.inbox.poll() : Promise.resolve()));
  }

  /** Stops accepting, drains every mailbox, writes what is unsaved, releases the leases and stops the actors. */
  async stop(): Promise<void> {
    if (this.res.state !== 'running') return;
    this.res.state = 'stopping';
    this.clearTimers();
    this.sys.inbox.stop();
    await Promise.allSettled([...this.background]);
    await Promise.allSettled(
      [...this.res.entries.values()].map((entry) =>
        entry.mailbox.enqueue(async () => {
          try {
            await this.sys.persistence.flush(entry);
          } catch (err) {
            entry.log.warn({ err }, 'actor not written at stop');
          }
          const owned = entry.owned;
          this.sys.residency.unload(entry);
          entry.owned = owned;
          await this.sys.leases.release(entry);
        }),
      ),
    );
    this.res.entries.clear();
    this.res.listeners.clear();
    this.res.state = 'stopped';
  }

  /**
   * Simulates a crash (tests): stops the timers and the in-memory actors without writing anything,
   * so this instance's leases stay in the store until they expire.
   */
  abandon(): void {
    this.res.state = 'stopped';
    this.clearTimers();
    this.sys.inbox.stop();
    for (const entry of this.res.entries.values()) this.sys.residency.unload(entry);
    this.res.entries.clear();
    this.res.listeners.clear();
  }

  /**
   * Creates and persists the actor unless it exists; either way resolves with its view. A kind at
   * its capacity on this instance stores the actor unowned: an instance with room claims it.
   * `resources` are the actor's in-memory companions (a socket), disposed when it leaves memory.
   */
  async spawn(kind: string, id: string, input?: unknown, opts: { resources?: ActorResources } = {}): Promise<ActorView> {
    const entry = this.entryFor(kind, id);
    return this.sys.residency.run(entry, async () => {
      if (entry.actor && entry.doc) return toView(entry.doc);
      const existing = await this.res.actors.findOne({ _id: entry.key });
      if (existing) return toView(existing);
      const json = input === undefined ? null : JSON.stringify(input);
      const [bytes, limit] = [Buffer.byteLength(json ?? ''), entry.kind.maxSnapshotBytes ?? this.res.maxSnapshotBytes];
      if (bytes > limit) throw new SnapshotTooLargeError(entry.kind.kind, id, bytes, limit); // before anything exists or runs
      const now = this.res.now();
      const queued = !this.sys.claims.hasRoom(entry.kind);
      const doc: ActorDoc = {
        _id: entry.key,
        kind: entry.kind.kind,
        actor_id: id,
        version: entry.kind.version,
        rev: 0,
        status: 'active',
        value: null,
        snapshot: null,
        input: json,
        // Until the first write, the claim is custodial: a crash here is resumed from `input`.
        custodial: true,
        owner: queued ? null : this.res.me,
        lease_until: queued ? null : new Date(now + this.res.leaseMs),
        epoch: 1,
        inbox_next: 0,
        inbox_applied: 0,
        created_at: new Date(now),
        updated_at: new Date(now),
      };
      // Queued, it does not run until claimed: project its initial state (computed, not started) so
      // lists by account and status see it from the first moment.
      if (queued && entry.kind.project) Object.assign(doc, projectInitial(entry.kind, input));
      try {
        await this.res.actors.insertOne(doc);
      } catch (err) {
        const raced = await this.res.actors.findOne({ _id: entry.key });
        if (!raced) throw err;
        return toView(raced);
      }
      if (queued) return toView(doc);
      this.sys.leases.grant(entry, 1, now + this.res.leaseMs);
      entry.resources = opts.resources ?? null;
      this.sys.residency.load(entry, doc);
      return this.sys.persistence.persist(entry, 'spawn');
    });
  }

  /**
   * Processes one event after the ones already queued for this actor. Resolves by `opts.wait`. An
   * actor held by another live instance gets the event through its inbox (applied by its owner,
   * in order, once). An actor that is done or failed ignores events (see `status`).
   */
  async send(kind: string, id: string, event: AnyEventObject, opts: SendOptions = {}): Promise<ActorView> {
    return (await this.deliver(kind, id, event, opts, false)).view;
  }

  /** Sends `event` and resolves with the first event its transition emitted (the machine's reply). */
  async ask<E extends AnyEventObject = AnyEventObject>(kind: string, id: string, event: AnyEventObject, opts: SendOptions = {}): Promise<Reply<E>> {
    const { view, emitted } = await this.deliver(kind, id, event, opts, true);
    const reply = emitted[0];
    if (!reply) throw new NoReplyError(kind, id, event.type);
    return { reply: reply as E, view };
  }

  /** `send`, spawning the actor from `input` first when it does not exist. */
  async sendOrSpawn(kind: string, id: string, input: unknown, event: AnyEventObject, opts: SendOptions = {}): Promise<ActorView> {
    try {
      return await this.send(kind, id, event, opts);
    } catch (err) {
      if (!(err instanceof ActorNotFoundError)) throw err;
      await this.spawn(kind, id, input);
      return this.send(kind, id, event, opts);
    }
  }

  /** `ask`, spawning the actor from `input` first when it does not exist. */
  async askOrSpawn<E extends AnyEventObject = AnyEventObject>(
    kind: string,
    id: string,
    input: unknown,
    event: AnyEventObject,
    opts: SendOptions = {},
  ): Promise<Reply<E>> {
    try {
      return await this.ask<E>(kind, id, event, opts);
    } catch (err) {
      if (!(err instanceof ActorNotFoundError)) throw err;
      await this.spawn(kind, id, input);
      return this.ask<E>(kind, id, event, opts);
    }
  }

  private async deliver(
    kindName: string,
    id: string,
    event: AnyEventObject,
    opts: SendOptions,
    collect: boolean,
  ): Promise<{ view: ActorView; emitted: AnyEventObject[] }> {
    const entry = this.entryFor(kindName, id);
    const wait = opts.wait ?? 'durable';
    const local = await this.sys.residency.run(entry, async () => {
      const unowned = await this.sys.leases.own(entry, 0);
      if (unowned && 'finished' in unowned) return { view: toView(unowned.finished), emitted: [] as AnyEventObject[], pending: false, remote: false };
      if (unowned) return { view: null, emitted: [], pending: false, remote: true };
      const actor = entry.actor!;
      if (actor.getSnapshot().status !== 'active') {
        const view = entry.dirty ? await this.sys.persistence.persist(entry, 'event') : toView(entry.doc!);
        return { view, emitted: [], pending: false, remote: false };
      }
      // Refused over the size limit only when the write would carry this event alone, to an actor needing no owner.
      const refusable = !entry.dirty && entry.doc?.custodial === false;
      entry.emitted = collect ? [] : null;
      this.sys.residency.quietly(entry, () => actor.send(event));
      const emitted = entry.emitted ?? [];
      entry.emitted = null;
      if (this.sys.persistence.policy(entry).mode === 'every-event') {
        return { view: await this.sys.persistence.persist(entry, 'event', refusable), emitted, pending: false, remote: false };
      }
      const now = this.sys.persistence.writesNow(entry, event.type);
      if (now) this.sys.persistence.queue(entry, 'event');
      return { view: this.sys.residency.view(entry), emitted, pending: wait === 'durable' && entry.dirty, remote: false };
    });
    if (local.remote) {
      if (wait === 'accepted' && !collect) {
        await this.sys.inbox.post(entry, event, false);
        return { view: await this.get(kindName, id), emitted: [] };
      }
      const messageId = await this.sys.inbox.post(entry, event, true);
      const { emitted } = await this.sys.inbox.awaitApplied(entry, messageId, opts.timeoutMs ?? this.res.leaseWaitMs);
      return { view: await this.get(kindName, id), emitted };
    }
    if (local.pending) {
      await this.sys.persistence.durable(entry);
      return { view: entry.actor ? this.sys.residency.view(entry) : local.view!, emitted: local.emitted };
    }
    return { view: local.view!, emitted: local.emitted };
  }

  /** The stored view, whoever owns the actor. */
  async get(kind: string, id: string): Promise<ActorView> {
    checkActorId(kind, id);
    const doc = await this.res.actors.findOne({ _id: actorKey(kind, id) });
    if (!doc) throw new ActorNotFoundError(kind, id);
    return toView(doc);
  }

  /**
   * Actors of a kind by their projected fields (`{account: 7, status: 'running'}`; MongoDB
   * operators allowed on values), newest first unless `sort` says otherwise; snapshots unopened.
   */
  async list(kind: string, where: Record<string, unknown>, opts: ListOptions = {}): Promise<ActorSummary[]> {
    const k = this.res.kindOf(kind);
    if (!k) throw new UnknownActorKindError(kind);
    const filter: Filter = { kind };
    for (const [name, value] of Object.entries(where)) filter[projectedField(name)] = value;
    const sort: Sort = {};
    for (const [name, dir] of Object.entries(opts.sort ?? { created_at: -1 as const })) sort[projectedField(name)] = dir;
    const docs = await this.res.actors.find(filter, { sort, limit: Math.min(opts.limit ?? 100, 1000), projection: { snapshot: 0, input: 0 } });
    return docs.map((doc) => {
      const projection: Record<string, unknown> = {};
      for (const [field, value] of Object.entries(doc)) if (field.startsWith('p_')) projection[field.slice(2)] = value;
      return { id: doc.actor_id, status: doc.status, value: doc.value, projection, created_at: doc.created_at, updated_at: doc.updated_at };
    });
  }

  /** Calls `listener` with the view after every change this instance stores; returns the unsubscribe. */
  subscribe(kind: string, id: string, listener: ActorListener): () => void {
    checkActorId(kind, id);
    const key = actorKey(kind, id);
    let set = this.res.listeners.get(key);
    if (!set) {
      set = new Set();
      this.res.listeners.set(key, set);
    }
    set.add(listener);
    return () => {
      const current = this.res.listeners.get(key);
      current?.delete(listener);
      if (current?.size === 0) this.res.listeners.delete(key);
    };
  }

  /** Whether the actor is running in this instance's memory (tests, metrics). */
  isLoaded(kind: string, id: string): boolean {
    return this.res.entries.get(actorKey(kind, id))?.actor != null;
  }

  /** Mailbox tasks and leases held now (the metrics' sample). */
  sample(): { mailboxDepth: number; leasesHeld: number } {
    let mailboxDepth = 0;
    let leasesHeld = 0;
    const now = this.res.now();
    for (const entry of this.res.entries.values()) {
      mailboxDepth += entry.mailbox.pending;
      if (entry.owned && entry.leaseUntil > now) leasesHeld += 1;
    }
    return { mailboxDepth, leasesHeld };
  }

  /** Takes over the custodial actors nobody holds (released, or lease expired), then applies retention. Runs every leaseMs/2. */
  async sweep(): Promise<void> {
    if (this.res.state !== 'running' || this.sweeping) return;
    this.sweeping = true;
    try {
      await this.claim();
      await this.sys.retention.expire();
    } finally {
      this.sweeping = false;
    }
  }

  private claim(): Promise<void> {
    if (this.res.state !== 'running') return Promise.resolve();
    return this.sys.claims.claimWhere({ $or: [{ owner: null }, { lease_until: { $lte: new Date(this.res.now()) } }] });
  }

  private entryFor(kindName: string, id: string): Entry {
    if (this.res.state !== 'running') throw new RuntimeStoppedError();
    const kind = this.res.kindOf(kindName);
    if (!kind) throw new UnknownActorKindError(kindName);
    checkActorId(kindName, id);
    return this.res.entry(kind, id);
  }

  private inBackground(work: Promise<unknown>): void {
    const tracked = work.catch((err: unknown) => this.res.log.warn({ err }, 'actor runtime background task failed'));
    this.background.add(tracked);
    void tracked.finally(() => this.background.delete(tracked));
  }

  private clearTimers(): void {
    for (const timer of [this.heartbeatTimer, this.sweepTimer, this.pollTimer]) if (timer) clearInterval(timer);
    this.heartbeatTimer = null;
    this.sweepTimer = null;
    this.pollTimer = null;
    for (const entry of this.res.entries.values()) {
      if (entry.evictTimer) clearTimeout(entry.evictTimer);
      entry.evictTimer = null;
      if (entry.checkpointTimer) clearTimeout(entry.checkpointTimer);
      entry.checkpointTimer = null;
    }
  }
}

export type { Projected, ResumedEvent as RuntimeResumedEvent };

/** The projected fields of a kind's initial state for `input`, as the first write would store them. */
function projectInitial(kind: ActorKind, input: unknown): Record<string, unknown> {
  const [snap] = initialTransition(kind.machine, input);
  return projectedFields(kind, snap);
}
