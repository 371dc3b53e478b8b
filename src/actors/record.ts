// How an actor is stored (collection `actors`, one document per actor) and how it is shown.
import type { StateValue } from 'xstate';
import type { Doc } from '../store/port.ts';

export const ACTORS = 'actors';

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
  created_at: Date;
  updated_at: Date;
};

/** What callers see (`GET /admin/actors/{kind}/{id}`). */
export interface ActorView {
  kind: string;
  id: string;
  value: StateValue | null;
  status: ActorStatus;
  context: unknown;
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

export function toView(doc: ActorDoc): ActorView {
  const snapshot = doc.snapshot === null ? null : (JSON.parse(doc.snapshot) as { context?: unknown; output?: unknown });
  return {
    kind: doc.kind,
    id: doc.actor_id,
    value: doc.value,
    status: doc.status,
    context: snapshot?.context ?? null,
    ...(snapshot?.output !== undefined ? { output: snapshot.output } : {}),
    ...(doc.error !== undefined ? { error: doc.error } : {}),
    revision: doc.rev,
    version: doc.version,
    owner: doc.owner,
    lease_until: doc.lease_until,
    updated_at: doc.updated_at,
  };
}
