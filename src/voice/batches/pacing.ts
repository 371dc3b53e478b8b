// A batch's tick (the `tick` effect of machines/voice-batch.machine.ts): what the batch's calls did
// since the last one, and the next calls placed. Idempotent: it reads the rows and the calls, so a
// tick re-run after a restore (xstate re-runs an invoked promise) finds what the first one did.
//
// - Ended calls: each row in progress whose call has ended (read from the call actor's projection
//   through `BatchCallsPort.ended`, so a batch restarted meanwhile learns it the same way) records
//   the attempt, then is queued again after `min_gap_seconds` when its outcome is one `retry.on`
//   names and attempts are left, else takes the outcome as its final status.
// - Placing, inside the window only, up to `max_concurrent` rows in progress, in index order: the
//   row is marked in progress with the attempt's Idempotency-Key (`<batch>:<row>:<attempt>`) BEFORE
//   the call is placed, through the same code as POST /v1/voice/call. A row found so marked with no
//   call (the gateway died between the mark and the answer) is placed again with the same key: the
//   call it made, if any, is answered instead of a new one (its idempotency record).
// - 402 insufficient_credit stops placing and the batch pauses; 429 (the account's other calls) and
//   503 stop placing until the next tick: the row goes back to the queue, no attempt counted. Any
//   other refusal is the attempt's outcome: `failed`, its code as end_reason.
import type { Logger } from 'pino';
import { ApiError } from '../../errors.ts';
import type { TickInput, TickOutput } from '../../../machines/voice-batch.machine.ts';
import type { VoiceCallBody } from '../checks.ts';
import type { ApiKeyPrincipal } from '../../identity/keys.ts';
import { FINAL_ROW_STATUSES, type Attempt, type BatchRows, type RowDoc, type RowStatus } from './rows.ts';
import { inWindow, nextOpening, type BatchWindow } from './window.ts';

export const RETRYABLE = ['busy', 'no_answer', 'failed', 'voicemail'] as const;
export type Retryable = (typeof RETRYABLE)[number];

export interface RetryPolicy {
  on: Retryable[];
  max_attempts: number;
  min_gap_seconds: number;
}

/** What the batch's effects need, fixed at its creation (the actor's `spec`). */
export interface BatchSpecFields {
  /** Whose calls they are: the key (or the dashboard's session) that created the batch. */
  principal: ApiKeyPrincipal;
  owner: { type: 'user' | 'org'; id: number };
  name: string | null;
  model: string;
  /** Every call's body but its number, variables and metadata. */
  template: Omit<VoiceCallBody, 'to' | 'variables' | 'metadata'>;
  window: BatchWindow;
  maxConcurrent: number;
  retry: RetryPolicy;
  metadata: Record<string, string>;
}

/** An ended call, as a row's attempt records it. */
export type CallEnd = Omit<Attempt, 'call_id'>;

/** The calls, as a batch places and reads them (src/voice/batches/calls.ts). */
export interface BatchCallsPort {
  /** POST /v1/voice/call's code: the call placed (or the one this key placed before). */
  place(principal: ApiKeyPrincipal, body: VoiceCallBody, key: string): Promise<string>;
  /** Forgets a key whose call was never made (its creator died between the key and the call). */
  forgetKey(principal: ApiKeyPrincipal, key: string): Promise<void>;
  /** The call's end once it has ended and is billed; null while it goes on; `missing` when it does not exist. */
  ended(callId: string): Promise<CallEnd | null | 'missing'>;
  /** Whether the wallet can afford the call now (the call's own check, nothing held). */
  affordable(principal: ApiKeyPrincipal, body: VoiceCallBody): Promise<boolean>;
}

export interface PacingDeps {
  rows: BatchRows;
  calls: BatchCallsPort;
  now(): number;
  logger: Logger;
  /** Told each attempt recorded (the tick then sums the cost again). */
  onRecorded?(): void;
}

/** A row's call body: the template with the row's number, variables and metadata. */
export const bodyFor = (spec: BatchSpecFields, row: Pick<RowDoc, 'to' | 'variables' | 'metadata'>): VoiceCallBody => ({
  ...spec.template,
  to: row.to,
  ...(Object.keys(row.variables).length > 0 ? { variables: row.variables } : {}),
  ...(Object.keys(row.metadata).length > 0 ? { metadata: row.metadata } : {}),
});

/** A call's status and end reason as a row's outcome (an answering machine's call is `voicemail`). */
const outcomeOf = (end: CallEnd): RowStatus => (end.status === 'completed' && end.end_reason === 'voicemail' ? 'voicemail' : (end.status as RowStatus));

type Placed = 'placed' | 'insufficient_credit' | 'concurrency' | 'recorded';

export async function tick(given: PacingDeps, input: TickInput<BatchSpecFields>): Promise<TickOutput> {
  const recorded = { count: 0 };
  const deps: PacingDeps = {
    ...given,
    onRecorded: () => {
      recorded.count++;
      given.onRecorded?.();
    },
  };
  const { rows } = deps;
  const { batchId, spec, mode } = input;
  let refused: TickOutput['refused'] = null;
  // What the calls in progress did.
  const inProgress = await rows.inProgress(batchId);
  let busy = 0;
  for (const row of inProgress) {
    const current = row.current;
    if (!current) continue;
    if (current.call_id === null) {
      // Marked, but the call's id never recorded: the last run died placing it. The same key again.
      const placed = await dial(deps, spec, row, current.attempt);
      if (placed === 'placed') busy++;
      else if (placed !== 'recorded') refused ??= placed;
      continue;
    }
    const end = await deps.calls.ended(current.call_id);
    if (end === null) {
      busy++;
      continue;
    }
    const ended: CallEnd =
      end === 'missing' ? { status: 'failed', end_reason: null, started_at: null, ended_at: null, billed_seconds: null, cost_microcents: null } : end;
    await record(deps, spec, row, { call_id: current.call_id, ...ended }, outcomeOf(ended));
  }
  if (mode === 'cancel') await rows.cancelQueued(batchId);
  const now = deps.now();
  const open = inWindow(spec.window, now);
  if (open && (mode === 'place' || mode === 'probe') && refused === null) {
    const due = await rows.due(batchId, now, spec.maxConcurrent - busy);
    if (mode === 'probe' && due[0] && !(await deps.calls.affordable(spec.principal, bodyFor(spec, due[0])))) refused = 'insufficient_credit';
    for (const row of refused === null ? due : []) {
      const marked = await rows.update(
        row,
        { status: 'in_progress', current: { attempt: row.attempts.length + 1, key: attemptKey(batchId, row), call_id: null } },
        'queued',
      );
      if (!marked) continue; // cancelled meanwhile
      const placed = await dial(deps, spec, row, row.attempts.length + 1);
      if (placed === 'insufficient_credit' || placed === 'concurrency') {
        refused = placed;
        break;
      }
    }
  }
  const at = deps.now();
  return {
    at,
    counts: await rows.counts(batchId),
    // A sum over the rows only when this tick recorded an attempt (10,000 rows are not read every tick).
    costMicrocents: recorded.count > 0 || input.costMicrocents === undefined ? await rows.cost(batchId) : input.costMicrocents,
    inWindow: inWindow(spec.window, at),
    nextWindowAt: nextOpening(spec.window, at),
    nextDueAt: await rows.nextDue(batchId),
    refused,
  };
}

const attemptKey = (batchId: string, row: RowDoc): string => `${batchId}:${row.index}:${row.attempts.length + 1}`;

/** Places the row's attempt (marked in progress with its key): the call's id recorded, or the refusal handled. */
async function dial(deps: PacingDeps, spec: BatchSpecFields, row: RowDoc, attempt: number): Promise<Placed> {
  const key = row.current!.key;
  const body = bodyFor(spec, row);
  const back = async () => void (await deps.rows.update(row, { status: 'queued', current: null }, 'in_progress'));
  for (let tries = 0; ; tries++) {
    try {
      const callId = await deps.calls.place(spec.principal, body, key);
      await deps.rows.update(row, { current: { attempt, key, call_id: callId } }, 'in_progress');
      return 'placed';
    } catch (err) {
      if (!(err instanceof ApiError)) {
        deps.logger.warn({ err, row: row.index }, 'a batch call could not be placed; the row waits for the next tick');
        await back();
        return 'concurrency';
      }
      // The key's record names a call that never came to exist (its creator died): forget it, place anew.
      if (err.code === 'conflict' && tries === 0) {
        await deps.calls.forgetKey(spec.principal, key);
        continue;
      }
      if (err.code === 'insufficient_credit' || err.code === 'concurrency_limit_exceeded' || err.status >= 500) {
        await back();
        return err.code === 'insufficient_credit' ? 'insufficient_credit' : 'concurrency';
      }
      const now = deps.now();
      const failed: Attempt = { call_id: null, status: 'failed', end_reason: err.code, started_at: now, ended_at: now, billed_seconds: 0, cost_microcents: 0 };
      await record(deps, spec, row, failed, 'failed');
      return 'recorded';
    }
  }
}

/** The row's attempt recorded: queued again after the gap when its outcome is retried and attempts are left, else final. */
async function record(deps: PacingDeps, spec: BatchSpecFields, row: RowDoc, attempt: Attempt, outcome: RowStatus): Promise<void> {
  const attempts = [...row.attempts, attempt];
  const cost_microcents = attempts.reduce((sum, a) => sum + (a.cost_microcents ?? 0), 0);
  const again = (RETRYABLE as readonly string[]).includes(outcome) && spec.retry.on.includes(outcome as Retryable) && attempts.length < spec.retry.max_attempts;
  const final = FINAL_ROW_STATUSES.includes(outcome) ? outcome : 'failed';
  deps.onRecorded?.();
  await deps.rows.update(
    row,
    again
      ? {
          status: 'queued',
          attempts,
          cost_microcents,
          current: null,
          next_attempt_at: Math.max(attempt.ended_at ?? deps.now(), deps.now()) + spec.retry.min_gap_seconds * 1000,
        }
      : { status: final, attempts, cost_microcents, current: null, final_call_id: attempt.call_id },
    'in_progress',
  );
}
