// A batch and its rows as the API answers them (docs/api/voice-batches.md): times in Unix seconds,
// money in cents (µ¢ kept exact inside, shown to the µ¢). A row's `analysis` is what it keeps of its
// final call's (src/voice/batches/analyses.ts): no call is read to show a row.
import { centsOf } from '../kind.ts';
import type { BatchContext } from './kind.ts';
import type { RowDoc } from './rows.ts';

const seconds = (ms: number | null | undefined): number | null => (ms === null || ms === undefined ? null : Math.floor(ms / 1000));

export type BatchObject = ReturnType<typeof batchObject>;

export function batchObject(c: BatchContext, rejected: RowDoc[]) {
  const s = c.spec;
  return {
    id: c.batchId,
    object: 'voice.batch' as const,
    name: s.name,
    model: s.model,
    status: c.status,
    paused_reason: c.status === 'paused' ? c.pausedReason : null,
    created_at: Math.floor(c.createdAt / 1000),
    start_at: Math.floor(c.startAt / 1000),
    started_at: seconds(c.startedAt),
    ended_at: seconds(c.endedAt),
    next_window_at: c.status === 'waiting_window' ? seconds(c.nextWindowAt) : null,
    window: s.window,
    max_concurrent: s.maxConcurrent,
    retry: s.retry,
    counts: c.counts,
    rejected: rejected.map((r) => ({ index: r.index, to: r.to, error: r.error ?? { code: 'invalid_request', message: 'invalid number' } })),
    cost_cents: centsOf(c.costMicrocents ?? 0),
    metadata: s.metadata,
  };
}

/** The attempt in progress once its call exists: the call's status as the batch last read it, its end still to come. */
function inFlight(r: RowDoc) {
  const c = r.status === 'in_progress' ? r.current : null;
  if (!c?.call_id) return [];
  const placed = seconds(c.placed_at);
  return [{ call_id: c.call_id, status: c.status ?? 'queued', end_reason: null, started_at: placed, ended_at: null, billed_seconds: null, cost_cents: null }];
}

export function rowObject(r: RowDoc) {
  return {
    index: r.index,
    to: r.to,
    variables: r.variables,
    metadata: r.metadata,
    status: r.status,
    attempts: [
      ...r.attempts.map((a) => ({
        call_id: a.call_id,
        status: a.status,
        end_reason: a.end_reason,
        started_at: seconds(a.started_at),
        ended_at: seconds(a.ended_at),
        billed_seconds: a.billed_seconds,
        cost_cents: a.cost_microcents === null ? null : centsOf(a.cost_microcents),
      })),
      ...inFlight(r),
    ],
    next_attempt_at: r.status === 'queued' && r.next_attempt_at > 0 ? seconds(r.next_attempt_at) : null,
    final_call_id: r.final_call_id,
    analysis: r.analysis ?? null,
    ...(r.error ? { error: r.error } : {}),
  };
}
