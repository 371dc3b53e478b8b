// The resources the runtime's systems share: options, collections, the in-memory entries, the
// clock, the log and the metrics. Each system (leases, persistence, residency, inbox, steps,
// claims, retention) receives this one object, in the manner of Trigger.dev's run engine.
import type { Logger } from 'pino';
import type { Actor, AnyEventObject, AnyStateMachine, Subscription } from 'xstate';
import type { Collection, Store } from '../store/port.ts';
import type { ActorKind, ActorResources } from './kinds.ts';
import { Mailbox } from './mailbox.ts';
import type { RuntimeMetrics } from './metrics.ts';
import { ACTORS, actorKey, INBOX, STEPS, type ActorDoc, type ActorView, type InboxDoc, type StepDoc } from './record.ts';
import type { Wakeups } from './wakeups.ts';

export type AnyActor = Actor<AnyStateMachine>;

export interface RuntimeOptions {
  store: Store;
  logger: Logger;
  /** Unique per process sharing the store; a restarted process may reuse its id. */
  instanceId: string;
  /** Lease length; renewed every leaseMs/3, expired leases swept every leaseMs/2. Default 15 s. */
  leaseMs?: number;
  /** How long an event waits for another instance's lease before ActorBusyError. Default 5 s. */
  leaseWaitMs?: number;
  /**
   * How long an actor in an idle state keeps its lease after a write, so that back-to-back events
   * (conversation turns) cost one write, not a lease grab and a write. Default 5 s; 0 turns it off.
   */
  idleLeaseGraceMs?: number;
  /** Default idle eviction delay of kinds that set none. Default 60 s. */
  idleEvictMs?: number;
  /** Soft cap of actors in memory: past it, the least recently used non-custodial ones go. Default 10 000. */
  maxInMemory?: number;
  /**
   * Largest snapshot of kinds that set none (bytes of JSON). Default 64 KiB. A sender's event that
   * would grow an idle actor past it is refused (413); any other snapshot past it is written and
   * logged at error (src/actors/systems/persistence.ts).
   */
  maxSnapshotBytes?: number;
  /** How often owners look for inbox messages without a wake-up (the change-stream fallback). Default 1 s. */
  inboxPollMs?: number;
  /** How long an inbox gap (a sequence number reserved but not written) is waited for. Default 2 s. */
  inboxGapWaitMs?: number;
  /** Wake-ups for inbox messages across instances (in process, or a MongoDB change stream). */
  wakeups?: Wakeups;
  metrics?: RuntimeMetrics;
  /** Epoch ms; leases, timestamps and `runtime.resumed` use it (tests inject a clock). */
  now?: () => number;
}

export interface Lease {
  epoch: number;
  controller: AbortController;
}

/** One actor as this instance knows it. */
export interface Entry {
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
  /** This instance is the stored owner (custodial actors, idle ones in their grace, any during an event). */
  owned: boolean;
  /** When the lease this instance holds ends (epoch ms); 0 when unknown. */
  leaseUntil: number;
  /** The lease's epoch and abort controller while owned. */
  lease: Lease | null;
  /** The actor's snapshot changed since it was last written. */
  dirty: boolean;
  /** A change that the policy writes at once is pending (state value moved, a durable event). */
  urgent: boolean;
  /** Set while the runtime itself drives the actor (start, send, stop): it writes afterwards. */
  quiet: boolean;
  persistQueued: boolean;
  checkpointTimer: NodeJS.Timeout | null;
  /** Callers waiting for the next write (send with wait 'durable' under the checkpoint policy). */
  durableWaiters: Array<{ resolve: () => void; reject: (err: unknown) => void }>;
  /** The last inbox message applied in memory (written with the next snapshot). */
  inboxApplied: number;
  /** When this instance first saw a gap in the inbox sequence (epoch ms), or 0. */
  inboxGapSince: number;
  /** Events the actor emitted while the runtime was collecting them (ask). */
  emitted: AnyEventObject[] | null;
  resources: ActorResources | null;
  evictTimer: NodeJS.Timeout | null;
  lastUsed: number;
  /** When the snapshot was last written (epoch ms): the checkpoint interval counts from it. */
  lastWriteAt: number;
  /** The last snapshot written was over the size limit (logged once per crossing). */
  oversized: boolean;
}

export class Resources {
  readonly store: Store;
  readonly actors: Collection<ActorDoc>;
  readonly inbox: Collection<InboxDoc>;
  readonly steps: Collection<StepDoc>;
  readonly kinds = new Map<string, ActorKind>();
  readonly entries = new Map<string, Entry>();
  /** Called with the view after every change this instance stores, per actor key. */
  readonly listeners = new Map<string, Set<(view: ActorView) => void>>();
  readonly log: Logger;
  readonly me: string;
  readonly leaseMs: number;
  readonly leaseWaitMs: number;
  readonly graceMs: number;
  readonly idleEvictMs: number;
  readonly maxInMemory: number;
  readonly maxSnapshotBytes: number;
  readonly inboxPollMs: number;
  readonly inboxGapWaitMs: number;
  readonly wakeups: Wakeups | null;
  readonly metrics: RuntimeMetrics | null;
  readonly now: () => number;
  state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';

  constructor(opts: RuntimeOptions) {
    this.store = opts.store;
    this.actors = opts.store.collection<ActorDoc>(ACTORS);
    this.inbox = opts.store.collection<InboxDoc>(INBOX);
    this.steps = opts.store.collection<StepDoc>(STEPS);
    this.log = opts.logger;
    this.me = opts.instanceId;
    this.leaseMs = opts.leaseMs ?? 15_000;
    this.leaseWaitMs = opts.leaseWaitMs ?? 5_000;
    this.graceMs = Math.min(opts.idleLeaseGraceMs ?? 5_000, this.leaseMs);
    this.idleEvictMs = opts.idleEvictMs ?? 60_000;
    this.maxInMemory = opts.maxInMemory ?? 10_000;
    this.maxSnapshotBytes = opts.maxSnapshotBytes ?? 64 * 1024;
    this.inboxPollMs = opts.inboxPollMs ?? 1_000;
    this.inboxGapWaitMs = opts.inboxGapWaitMs ?? 2_000;
    this.wakeups = opts.wakeups ?? null;
    this.metrics = opts.metrics ?? null;
    this.now = opts.now ?? Date.now;
  }

  kindOf(name: string): ActorKind | undefined {
    return this.kinds.get(name);
  }

  /** The entry of an actor (created empty when this instance has none), for a registered kind. */
  entry(kind: ActorKind, id: string): Entry {
    const key = actorKey(kind.kind, id);
    let entry = this.entries.get(key);
    if (!entry) {
      entry = {
        key,
        id,
        kind,
        log: this.log.child({ actor_kind: kind.kind, actor_id: id }),
        mailbox: new Mailbox(),
        actor: null,
        subscription: null,
        doc: null,
        owned: false,
        leaseUntil: 0,
        lease: null,
        dirty: false,
        urgent: false,
        quiet: false,
        persistQueued: false,
        checkpointTimer: null,
        durableWaiters: [],
        inboxApplied: 0,
        inboxGapSince: 0,
        emitted: null,
        resources: null,
        evictTimer: null,
        lastUsed: this.now(),
        lastWriteAt: 0,
        oversized: false,
      };
      this.entries.set(key, entry);
    }
    return entry;
  }
}
