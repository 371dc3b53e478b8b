// The typed failures of the actor runtime. Each carries the code of the HTTP error table
// (src/http/errors.ts) it maps to, so the HTTP layer translates without knowing the runtime.

export type ActorErrorCode = 'not_found' | 'revision_conflict' | 'actor_busy' | 'shutting_down' | 'internal_error';

export abstract class ActorRuntimeError extends Error {
  abstract readonly code: ActorErrorCode;
}

export class ActorNotFoundError extends ActorRuntimeError {
  override name = 'ActorNotFoundError';
  readonly code = 'not_found';
  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super(`no ${kind} actor with id ${id}`);
  }
}

/** Someone else wrote the actor (its revision or owner changed behind this instance's back). */
export class RevisionConflictError extends ActorRuntimeError {
  override name = 'RevisionConflictError';
  readonly code = 'revision_conflict';
  constructor(
    readonly kind: string,
    readonly id: string,
    readonly expectedRevision: number,
  ) {
    super(`${kind} actor ${id} was changed by another writer (expected revision ${expectedRevision})`);
  }
}

/** Another live instance holds the actor's lease and did not release it within leaseWaitMs. */
export class ActorBusyError extends ActorRuntimeError {
  override name = 'ActorBusyError';
  readonly code = 'actor_busy';
  constructor(
    readonly kind: string,
    readonly id: string,
    readonly owner: string | null,
  ) {
    super(`${kind} actor ${id} is owned by instance ${owner ?? '?'}`);
  }
}

/** The runtime is stopping (or stopped) and accepts no more work. */
export class RuntimeStoppedError extends ActorRuntimeError {
  override name = 'RuntimeStoppedError';
  readonly code = 'shutting_down';
  constructor() {
    super('the actor runtime is stopped');
  }
}

/** A programming error: the kind was never registered. */
export class UnknownActorKindError extends ActorRuntimeError {
  override name = 'UnknownActorKindError';
  readonly code = 'internal_error';
  constructor(readonly kind: string) {
    super(`actor kind ${kind} is not registered`);
  }
}
