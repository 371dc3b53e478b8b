// What a kind of actor declares to the runtime: its machine, how it is persisted, what happens
// when its owner dies, how many one instance may hold, what of its snapshot is projected onto the
// stored document, and the in-memory resources its effects use.
import type { Logger } from 'pino';
import type { AnyEventObject, AnyStateMachine, EventFrom, StateValue } from 'xstate';

/** The event every restored actor receives; `now` is epoch ms. */
export const RESUMED = 'runtime.resumed';

/**
 * `resume`: the actor carries on (its effects are re-run, idempotent by key). `finalize`: the
 * in-memory resources it depended on (a socket) died with its owner; the machine goes to its
 * closing path and bills what it recorded.
 */
export type ResumeMode = 'resume' | 'finalize';
export type ResumedEvent = { type: typeof RESUMED; now: number; mode: ResumeMode };

/**
 * When the runtime writes an actor's snapshot.
 * - `every-event`: after every event and every internal change, before `send` resolves (durable):
 *   right for actors that change rarely and must lose nothing (webhook endpoints).
 * - `checkpoint`: when the state value, status or custody changes, after an event whose type is in
 *   `durableEvents`, and otherwise at most every `intervalMs`; events queued together are applied
 *   together and written once. For actors that change often (sockets, sessions, jobs' progress).
 */
export type PersistencePolicy = { mode: 'every-event' } | { mode: 'checkpoint'; intervalMs: number; durableEvents?: readonly string[] };

/** Scalars only: projected fields are indexed and queried without opening snapshots. */
export type Projected = string | number | boolean | Date | null;

/** What an effect needs to act only while this instance owns the actor. */
export interface LeaseScope {
  /** Bumped every time an instance (re)acquires the actor: a fencing token for side effects. */
  readonly epoch: number;
  /** Aborted when this instance loses (or gives up) this lease. */
  readonly signal: AbortSignal;
}

/** Side effects that must happen once per actor, whatever replays or takeovers follow. */
export interface StepRunner {
  /**
   * Runs `work` once for this actor and step name: a step recorded as done returns its recorded
   * result without running. The record is written only while this instance still holds the epoch
   * it started under (StepFencedError otherwise). `work` gets the lease's signal: stop when aborted.
   */
  once<T>(step: string, work: (scope: LeaseScope) => Promise<T>): Promise<T>;
  /** The recorded result of a step that is done, or undefined when it is not (nothing runs). */
  done<T>(step: string): Promise<T | undefined>;
}

/** An actor's in-memory resources (a socket, a decoder, an upstream bridge): never persisted. */
export interface ActorResources {
  /** Called once when the actor leaves memory (finished, evicted, dropped, runtime stopped). */
  dispose?(): void | Promise<void>;
}

export interface ActorKindContext<R extends ActorResources = ActorResources> {
  kind: string;
  id: string;
  logger: Logger;
  /** The current lease (epoch and abort signal); read it when an effect starts. */
  lease(): LeaseScope;
  steps: StepRunner;
  /** The resources attached at spawn (or by `attach`), or null when there are none (after a takeover). */
  resources(): R | null;
}

export interface ActorKind<TMachine extends AnyStateMachine = AnyStateMachine, R extends ActorResources = ActorResources> {
  kind: string;
  machine: TMachine;
  /** The machine's `version`: stored with every snapshot. */
  version: number;
  /**
   * The real effects of one actor, given to `machine.provide(...)`. A method, not a function-typed
   * property: its parameter is then compared both ways, so a kind with its own resources type `R`
   * is still an `ActorKind` (the runtime's map of registered kinds holds every kind as one type, and
   * gives each kind's `provide` the resources attached for that kind).
   */
  provide?(ctx: ActorKindContext<R>): Parameters<TMachine['provide']>[0];
  /** Turns a persisted snapshot written by an older machine version into one this version restores. */
  migrate?: (persisted: unknown, fromVersion: number) => unknown;
  /** Default `every-event`. */
  persistence?: PersistencePolicy;
  /**
   * What a restored actor is told when the instance that held it died (or restarted) without its
   * resources: `resume` (default; a job) or `finalize` (a socket-bound actor). An actor reloaded by
   * the instance that still holds its resources is always told `resume`.
   */
  onOrphan?: ResumeMode;
  /** How many custodial actors of this kind one instance holds at most; more wait, unowned, to be claimed. */
  capacity?: number;
  /** Fields copied from the snapshot onto the stored document (as `p_<name>`), for indexed lists. */
  project?: (snapshot: { value: StateValue; context: unknown; status: string }) => Record<string, Projected>;
  /** Indexes over projected fields, e.g. `[{ account: 1, status: 1, created_at: -1 }]` (`created_at` is the document's). */
  indexes?: ReadonlyArray<Record<string, 1 | -1>>;
  /** Largest stored snapshot, bytes of JSON; default the runtime's (64 KiB). */
  maxSnapshotBytes?: number;
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
  /** Deletes what a finished actor kept outside its snapshot (a job's blobs), just before the actor itself. */
  onRetired?: (id: string) => Promise<void>;
}

/** The events a kind's machine accepts (for typed references). */
export type KindEvent<K> = K extends ActorKind<infer M, infer _R> ? EventFrom<M> : AnyEventObject;

/** Where a projected field is stored on the actor document. */
export function projectedField(name: string): string {
  return name === 'created_at' || name === 'updated_at' || name === 'kind' ? name : `p_${name}`;
}

/** The stored fields (`p_<name>`) a kind projects from a snapshot; none when it projects nothing. */
export function projectedFields(kind: ActorKind, snap: { value: StateValue; context: unknown; status: string }): Record<string, Projected> {
  const out: Record<string, Projected> = {};
  if (!kind.project) return out;
  for (const [name, value] of Object.entries(kind.project({ value: snap.value, context: snap.context, status: snap.status })))
    out[projectedField(name)] = value;
  return out;
}
