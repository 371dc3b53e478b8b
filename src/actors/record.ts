// How an actor is stored (collection `actors`, one document per actor) and how it is shown.
import type { StateValue } from 'xstate';
import type { Doc } from '../store/port.ts';
import { isKeyString } from '../store/key-strings.ts';
import { InvalidActorIdError, MAX_ACTOR_ID_LENGTH } from './errors.ts';

export const ACTORS = 'actors';
/** Messages for actors owned by another instance (src/actors/systems/inbox.ts). */
export const INBOX = 'actor_inbox';
/** Side effects done once per actor (src/actors/systems/steps.ts). */
export const STEPS = 'actor_steps';

export type ActorStatus = 'active' | 'done' | 'error' | 'stopped';

export type ActorDoc = Doc & {
  /** `${kind}:${actor_id}` */
  _id: string;
  kind: string;
  actor_id: string;
  /** The machine version that wrote `snapshot`. */
  version: number;
  /** Bumped by every snapshot write; each write is conditional on the previous value. */
  rev: number;
  status: ActorStatus;
  value: StateValue | null;
  /**
   * `JSON.stringify(actor.getPersistedSnapshot())`; a string because MongoDB dislikes `$` and dotted
   * keys. Null only between `spawn`'s claim of the id and its first write (then `input` rebuilds it).
   * An actor that fails keeps its last good snapshot, with status 'error' and `error`.
   */
  snapshot: string | null;
  /** JSON of the spawn input, or null. */
  input: string | null;
  error?: string;
  /** Not final and not in a state tagged 'idle': someone must hold it in memory (and a lease). */
  custodial: boolean;
  owner: string | null;
  lease_until: Date | null;
  /** Bumped by every lease grab: the fencing token of side effects (absent on older documents: 0). */
  epoch?: number;
  /** The last inbox sequence number reserved by a sender. */
  inbox_next?: number;
  /** The last inbox message applied; written in the same conditional write as the snapshot it is in. */
  inbox_applied?: number;
  created_at: Date;
  updated_at: Date;
} & { [projected: `p_${string}`]: unknown };

/** One message for an actor, from any instance; applied by the actor's owner in `seq` order, once. */
export type InboxDoc = Doc & {
  /** `${actor key}|${seq, zero-padded}` */
  _id: string;
  key: string;
  seq: number;
  /** JSON of the event; null for a skipped sequence number (a sender that died after reserving it). */
  event: string | null;
  /** The sender waits for the reply (the events the transition emitted). */
  ask: boolean;
  /** pending → taken (by the owner, about to apply) → applied; or skipped (a gap), withdrawn (its sender gave up), failed (no actor). */
  status: 'pending' | 'taken' | 'applied' | 'skipped' | 'withdrawn' | 'failed';
  /** JSON of the emitted events, once applied (asks only). */
  reply?: string | null;
  error?: string | null;
  from: string;
  created_at: Date;
};

/** A side effect recorded once per actor and step name. */
export type StepDoc = Doc & {
  /** `${actor key}|${step}` */
  _id: string;
  key: string;
  /** The epoch under which it was last started; its result is recorded only under that epoch. */
  epoch: number;
  owner: string;
  status: 'running' | 'done';
  /** JSON of the result. */
  result?: string;
  started_at: Date;
  done_at?: Date;
};

export function inboxId(key: string, seq: number): string {
  return `${key}|${String(seq).padStart(12, '0')}`;
}

export function stepId(key: string, step: string): string {
  return `${key}|${step}`;
}

/** What callers see (`GET /admin/actors/{kind}/{id}`). */
export interface ActorView {
  kind: string;
  id: string;
  value: StateValue | null;
  status: ActorStatus;
  context: unknown;
  /** What it was spawned from, while it has not run yet (queued for capacity: no snapshot, no context). */
  input?: unknown;
  output?: unknown;
  error?: string;
  revision: number;
  version: number;
  owner: string | null;
  lease_until: Date | null;
  updated_at: Date;
}

export function actorKey(kind: string, id: string): string {
  return `${kind}:${id}`;
}

/** Throws InvalidActorIdError unless `id` can key an actor (the runtime's facade checks every id given to it). */
export function checkActorId(kind: string, id: string): void {
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ACTOR_ID_LENGTH || !isKeyString(id)) throw new InvalidActorIdError(kind, id);
}

export function toView(doc: ActorDoc): ActorView {
  const snapshot = doc.snapshot === null ? null : (JSON.parse(doc.snapshot) as { context?: unknown; output?: unknown });
  return {
    kind: doc.kind,
    id: doc.actor_id,
    value: doc.value,
    status: doc.status,
    context: snapshot?.context ?? null,
    ...(doc.snapshot === null && doc.input ? { input: JSON.parse(doc.input) } : {}),
    ...(snapshot?.output !== undefined ? { output: snapshot.output } : {}),
    ...(doc.error !== undefined ? { error: doc.error } : {}),
    revision: doc.rev,
    version: doc.version,
    owner: doc.owner,
    lease_until: doc.lease_until,
    updated_at: doc.updated_at,
  };
}
