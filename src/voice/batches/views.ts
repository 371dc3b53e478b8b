// A batch and its rows as the API answers them (docs/api/voice-batches.md): times in Unix seconds,
// money in cents (µ¢ kept exact inside, shown to the µ¢). A row's `analysis` is its final call's
// (issue 43 §2 adds it to the call's view; read defensively: a call without one shows null).
import { centsOf } from '../kind.ts';
import type { BatchContext } from './kind.ts';
import type { RowDoc } from './rows.ts';

/** The part of a call's view a batch reads (its analysis, the deterministic outcome's intent). */
export interface CallFacts {
  analysis?: { summary?: string | null; fields?: Record<string, unknown> | null } | null;
  outcome?: { actions?: { intent?: string | null }[] } | null;
}
export type CallRead = (account: string, callId: string) => Promise<CallFacts | null>;

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

export function rowObject(r: RowDoc, call: CallFacts | null) {
  return {
    index: r.index,
    to: r.to,
    variables: r.variables,
    metadata: r.metadata,
    status: r.status,
    attempts: r.attempts.map((a) => ({
      call_id: a.call_id,
      status: a.status,
      end_reason: a.end_reason,
      started_at: seconds(a.started_at),
      ended_at: seconds(a.ended_at),
      billed_seconds: a.billed_seconds,
      cost_cents: a.cost_microcents === null ? null : centsOf(a.cost_microcents),
    })),
    next_attempt_at: r.status === 'queued' && r.next_attempt_at > 0 ? seconds(r.next_attempt_at) : null,
    final_call_id: r.final_call_id,
    analysis: call?.analysis ?? null,
    ...(r.error ? { error: r.error } : {}),
  };
}
