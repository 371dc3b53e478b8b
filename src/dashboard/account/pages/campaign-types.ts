// A batch and its numbers as /portal/voice/batches answers them (the /v1 voice.batch object,
// docs/api/voice-batches.md): the fields the Campaigns pages read. Written out rather than imported
// from src/voice/batches/views.ts, whose imports would pull server modules into the dashboard's
// type check; test/dashboard/bundle.test.ts checks that the server's objects are assignable to them.
import type { ROW_STATUSES } from '../../ui/constants.ts';

export type BatchStatus = 'scheduled' | 'running' | 'waiting_window' | 'paused' | 'cancelling' | 'canceled' | 'completed';
export type RowStatus = (typeof ROW_STATUSES)[number];
export type Counts = Record<'total' | RowStatus, number>;

export interface Batch {
  id: string;
  name: string | null;
  model: string;
  status: BatchStatus;
  paused_reason: 'api' | 'insufficient_credit' | null;
  created_at: number;
  start_at: number | null;
  started_at: number | null;
  ended_at: number | null;
  next_window_at: number | null;
  /** The calling window: an IANA time zone, the days, and the hours ("HH:MM") calls may be placed in. */
  window: { time_zone: string; days: string[]; start: string; end: string };
  max_concurrent: number;
  retry: { on: string[]; max_attempts: number; min_gap_seconds: number };
  counts: Counts;
  rejected: { index: number; to: string; error: { code: string; message: string } }[];
  cost_cents: number;
  /** A batch read alone: its numbers, paged by index. */
  calls?: { data: BatchRow[]; has_more: boolean; first_id: number | null; last_id: number | null };
}

/** One number of a batch, with every attempt made to call it. */
export interface BatchRow {
  index: number;
  to: string;
  status: RowStatus;
  attempts: {
    /** Null for a moment: the attempt is written before its call is placed. */
    call_id: string | null;
    status: string;
    end_reason: string | null;
    started_at: number | null;
    ended_at: number | null;
    billed_seconds: number | null;
    cost_cents: number | null;
  }[];
  next_attempt_at: number | null;
  final_call_id: string | null;
}
