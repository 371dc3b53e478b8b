// Where a callee→agent turn's time goes (issue 39, "Where the time goes"): the moments a callee's
// turn passes on its way to the agent's first frame, taken on one clock (the live side's `now`,
// epoch ms) by the listening (src/voice/listening.ts) and the speaking (src/voice/speaking.ts), and
// the stages between them, which add up to the turn's latency:
//   endpointing   the end of the callee's speech (its last voiced frame, read on the audio's clock)
//                 → the utterance cut (the endpointing silence heard); a keyed turn: its last key →
//                 `#` or the keys' pause
//   queued        the cut → its recognition starts (the turns before it answered first: a reply
//                 still playing, a recognition still running)
//   recognition   → the stt model's text
//   agent         → the agent's decision (the pack's reply chosen) or an LLM's first streamed chunk
//   synthesis     → the reply's first audio in hand (a pack wording's clip, from the cache or
//                 synthesized once; an LLM's first sentence, complete and synthesized)
//   first_frame   → its first frame written to the carrier's socket (the playback's 10 ms clock)
// The latency runs from the end of the speech, not from the cut: the carrier's side (and the
// callee) count the endpointing silence too. Until issue 39 the call's `turn_latency_ms` was
// counted from the cut and read the endpointing wait lower than the carrier's figure.
import type { Histogram } from 'prom-client';
import type { TurnStages } from '../../machines/voice-call.machine.ts';

/** When a callee's turn passed each point before the agent took it (epoch ms). */
export interface CalleeTurnTimes {
  /** The end of the callee's speech: its last voiced frame, on the audio's clock (a keyed turn: its last key). */
  ended: number;
  /** The utterance cut: the endpointing silence heard (a keyed turn: `#` or the keys' pause). */
  cut: number;
  /** Its recognition began (the turns before it done) and ended with its text; both `cut`'s time for keys. */
  recognising: number;
  recognised: number;
}

/** The agent's side of the turn (epoch ms): its reply decided, its first audio in hand, its first frame sent. */
export interface ReplyTimes {
  decided: number;
  audio: number;
  firstFrame: number;
}

export const STAGES = ['endpointing', 'queued', 'recognition', 'agent', 'synthesis', 'first_frame'] as const;

/** The turn's latency and its stages, whole ms (each moment rounded once, so the stages add up to the latency exactly). */
export function turnStages(heard: CalleeTurnTimes, reply: ReplyTimes): { latencyMs: number; stages: TurnStages } {
  const at = [heard.ended, heard.cut, heard.recognising, heard.recognised, reply.decided, reply.audio, reply.firstFrame].map(Math.round);
  // Never backwards: a moment taken before the one it follows (a clock step) counts as that one.
  for (let i = 1; i < at.length; i++) at[i] = Math.max(at[i]!, at[i - 1]!);
  const d = (i: number) => at[i + 1]! - at[i]!;
  return {
    latencyMs: at[6]! - at[0]!,
    stages: { endpointing_ms: d(0), queued_ms: d(1), recognition_ms: d(2), agent_ms: d(3), synthesis_ms: d(4), first_frame_ms: d(5) },
  };
}

/** The instance's voice histograms (src/http/metrics.ts): each turn's stages and latency, and the answer → the agent's first frame. */
export interface VoiceMetrics {
  stages: Histogram<'stage'>;
  latency: Histogram<string>;
  firstFrame: Histogram<string>;
}

/** A turn's figures into the histograms (seconds, as Prometheus counts time). */
export function observeTurn(metrics: VoiceMetrics | undefined, latencyMs: number, stages: TurnStages): void {
  if (!metrics) return;
  metrics.latency.observe(latencyMs / 1000);
  for (const stage of STAGES) metrics.stages.observe({ stage }, stages[`${stage}_ms`] / 1000);
}

function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** p50 and p95 of `values` (nearest rank; null for none). */
export const quantiles = (values: number[]): { p50: number | null; p95: number | null } => ({ p50: percentile(values, 50), p95: percentile(values, 95) });

/** Each stage's p50 and p95 over the turns that carry stages. */
export function stageQuantiles(turns: readonly { stages?: TurnStages }[]): Record<keyof TurnStages, { p50: number | null; p95: number | null }> {
  const timed = turns.flatMap((t) => (t.stages ? [t.stages] : []));
  return Object.fromEntries(STAGES.map((s) => [`${s}_ms`, quantiles(timed.map((t) => t[`${s}_ms`]))])) as Record<
    keyof TurnStages,
    { p50: number | null; p95: number | null }
  >;
}
