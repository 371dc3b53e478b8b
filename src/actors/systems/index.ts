// The runtime's systems as they reach each other: each a small class over the shared Resources
// (residency.ts, leases.ts, persistence.ts, inbox.ts, steps.ts, claims.ts, retention.ts), reaching
// its peers through this one object (filled by src/actors/runtime.ts). Each port below lists what
// the other systems and the runtime call of one system, and its class implements it: so a system
// imports this file and never another system's, and no import runs in a circle.
import type { AnyEventObject } from 'xstate';
import type { Filter } from '../../store/port.ts';
import type { ActorKind, LeaseScope, PersistencePolicy, ResumeMode } from '../kinds.ts';
import type { ActorDoc, ActorView } from '../record.ts';
import type { AnyActor, Entry } from '../resources.ts';

/** What `own` found when the actor cannot be owned here right now. */
export type Unowned = { finished: ActorDoc } | { busy: ActorDoc };

export type PersistReason = 'event' | 'change' | 'checkpoint' | 'inbox' | 'stop' | 'spawn' | 'resume';

export interface Delivered {
  /** The events the transition emitted (the reply of an ask). */
  emitted: AnyEventObject[];
}

export interface ResidencyPort {
  load(entry: Entry, doc: ActorDoc, mode?: ResumeMode): void;
  drop(entry: Entry, reason: string): void;
  unload(entry: Entry, opts?: { keepResources?: boolean }): void;
  quietly(entry: Entry, fn: () => void): void;
  run<T>(entry: Entry, task: () => Promise<T>): Promise<T>;
  evict(entry: Entry): boolean;
  /** The view of the in-memory actor (its context is live: read, never mutate). */
  view(entry: Entry): ActorView;
}

export interface LeasesPort {
  scope(entry: Entry): LeaseScope;
  held(entry: Entry): boolean;
  own(entry: Entry, waitMs?: number): Promise<Unowned | null>;
  acquire(entry: Entry, extra: Filter): Promise<{ doc: ActorDoc; previousOwner: string | null } | null>;
  grant(entry: Entry, epoch: number, until: number): void;
  forget(entry: Entry): void;
  release(entry: Entry): Promise<void>;
  heartbeat(): Promise<void>;
}

export interface PersistencePort {
  policy(entry: Entry): PersistencePolicy;
  writesNow(entry: Entry, eventType: string): boolean;
  changed(entry: Entry, actor: AnyActor): void;
  queue(entry: Entry, reason: PersistReason): void;
  durable(entry: Entry): Promise<void>;
  cancel(entry: Entry, err: unknown): void;
  persist(entry: Entry, reason: PersistReason, refusable?: boolean): Promise<ActorView>;
  flush(entry: Entry): Promise<void>;
}

export interface InboxPort {
  start(): void;
  stop(): void;
  post(entry: Entry, event: AnyEventObject, ask: boolean): Promise<string>;
  awaitApplied(entry: Entry, messageId: string, timeoutMs: number): Promise<Delivered>;
  poll(): Promise<void>;
  drainOwned(entry: Entry): Promise<void>;
}

export interface StepsPort {
  done<T>(entry: Entry, step: string): Promise<T | undefined>;
  once<T>(entry: Entry, step: string, work: (scope: LeaseScope) => Promise<T>): Promise<T>;
}

export interface ClaimsPort {
  onFreed: (() => void) | null;
  modeFor(entry: Entry, doc: ActorDoc): ResumeMode;
  hasRoom(kind: ActorKind): boolean;
  freed(kind: ActorKind): void;
  claimWhere(filter: Filter): Promise<void>;
}

export interface RetentionPort {
  expire(): Promise<void>;
}

export interface Systems {
  residency: ResidencyPort;
  leases: LeasesPort;
  persistence: PersistencePort;
  inbox: InboxPort;
  steps: StepsPort;
  claims: ClaimsPort;
  retention: RetentionPort;
}
