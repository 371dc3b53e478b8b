// What a batch row keeps of its final call's analysis (docs/api/voice-batches.md): its status,
// source, summary, fields and intent, written on the row when the batch records the call's end (the
// tick reads the call's view then, once), so reading a page of rows reads no call. An analysis still
// `pending` at that moment (an llm's answer comes after the call's end and charge), or a row recorded
// before rows kept it, is read from the call when the row is read (GET, the CSV) and written on the
// row once final: each call is read until its analysis is settled, then never again.
import type { CallAnalysisObject } from '../views.ts';
import type { BatchRows, RowAnalysis, RowDoc } from './rows.ts';

export type { RowAnalysis };

/** A call's view as the batch reads it for its analysis (the call API's `get`). */
export type CallRead = (account: string, callId: string) => Promise<{ analysis?: CallAnalysisObject | null } | null>;

/** The part of a call's analysis a row keeps (null: the call has none). */
export function rowAnalysis(a: CallAnalysisObject | null | undefined): RowAnalysis | null {
  if (!a) return null;
  return { status: a.status, source: a.source, summary: a.summary, fields: a.fields, intent: a.intent };
}

/** Whether the row's analysis is still to learn from its call: not recorded, or pending when it was. */
export const unsettled = (r: RowDoc): boolean => r.final_call_id !== null && (r.analysis === undefined || r.analysis?.status === 'pending');

/**
 * Fills in the unsettled rows' analyses from their calls (16 reads at a time) and keeps each settled
 * one on its row; `reads` counts the calls read. A call that cannot be read leaves the row as it was.
 */
export async function settleAnalyses(rows: BatchRows, read: CallRead, account: string, docs: RowDoc[]): Promise<{ reads: number }> {
  const todo = docs.filter(unsettled);
  for (let i = 0; i < todo.length; i += 16) {
    await Promise.all(
      todo.slice(i, i + 16).map(async (r) => {
        const call = await read(account, r.final_call_id!).catch(() => null);
        if (!call) return;
        const analysis = rowAnalysis(call.analysis);
        if (analysis?.status === 'pending') r.analysis = analysis;
        else await rows.keepAnalysis(r, analysis);
      }),
    );
  }
  return { reads: todo.length };
}
