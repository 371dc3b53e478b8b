// The typed failures of the actor runtime. Each carries the code of the error table
// (src/errors.ts) it maps to, so the HTTP layer translates without knowing the runtime.

export type ActorErrorCode =
  | 'not_found'
  | 'revision_conflict'
  | 'actor_busy'
  | 'shutting_down'
  | 'internal_error'
  | 'actor_state_too_large'
  | 'invalid_request';

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

/**
 * An id the runtime cannot key an actor by: empty, longer than MAX_ACTOR_ID_LENGTH, or not a key
 * string (src/store/key-strings.ts: an unpaired surrogate or a NUL). The message leaves the id out.
 */
export class InvalidActorIdError extends ActorRuntimeError {
  override name = 'InvalidActorIdError';
  readonly code = 'invalid_request';
  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super(`${kind} actor id is not valid: 1 to ${MAX_ACTOR_ID_LENGTH} characters of well-formed UTF-16 without NUL`);
  }
}

/** The longest actor id (in UTF-16 code units); its store key is `kind:id`. */
export const MAX_ACTOR_ID_LENGTH = 512;

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

/** A snapshot larger than the kind allows: transcripts and audio belong in the blob store. */
export class SnapshotTooLargeError extends ActorRuntimeError {
  override name = 'SnapshotTooLargeError';
  readonly code = 'actor_state_too_large';
  constructor(
    readonly kind: string,
    readonly id: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`${kind} actor ${id}: a snapshot of ${bytes} bytes is over the ${limit}-byte limit; the event was not kept`);
  }
}

/** A step's result could not be recorded: another instance took the actor (a newer epoch) meanwhile. */
export class StepFencedError extends ActorRuntimeError {
  override name = 'StepFencedError';
  readonly code = 'actor_busy';
  constructor(
    readonly key: string,
    readonly step: string,
    readonly epoch: number,
  ) {
    super(`step ${step} of ${key} was fenced: epoch ${epoch} is no longer this instance's`);
  }
}

/** The transition `ask` caused emitted nothing (a machine bug, or an event the state ignores). */
export class NoReplyError extends ActorRuntimeError {
  override name = 'NoReplyError';
  readonly code = 'internal_error';
  constructor(
    readonly kind: string,
    readonly id: string,
    readonly eventType: string,
  ) {
    super(`${kind} actor ${id} emitted no reply to ${eventType}`);
  }
}
