// A voice call's public view: the call's actor (its view from the runtime) as the API answers it,
// `VoiceCallObject` (the type is src/voice/views.ts, which the dashboard's bundle reads too): the
// times in seconds, the cost in cents, the turn latency's percentiles and its stages'
// (src/voice/turn-stages.ts), and the transcript, read from the call's own collection
// (src/voice/transcript.ts) beside its actor. `facts` reads the call's machine context (or its
// input, before the actor ran) from a view.
import type { ActorView } from '../actors/record.ts';
import type { CallStatus, Turn, VoiceCallContext } from '../../machines/voice-call.machine.ts';
import { centsOf, type CallSpecFields } from './kind.ts';
import { quantiles, stageQuantiles } from './turn-stages.ts';
import type { VoiceCallObject } from './views.ts';
import { analysisOf } from './analysis.ts';

/** The call's machine context from its actor's view (its input, before the actor ran); null for a view that is not a call's. */
export function facts(view: ActorView): VoiceCallContext<CallSpecFields> | null {
  const c = (view.context ?? view.input ?? null) as Partial<VoiceCallContext<CallSpecFields>> | null;
  if (!c || typeof c.callId !== 'string') return null;
  return c as VoiceCallContext<CallSpecFields>;
}

const seconds = (ms: number | null | undefined): number | null => (ms === null || ms === undefined ? null : Math.floor(ms / 1000));

/** The answer → the agent's first frame, ms: the first agent turn's start (10 ms resolution); null before one played. */
function firstFrameMs(turns: readonly Turn[]): number | null {
  const first = turns.find((t) => t.role === 'agent');
  return first ? Math.round(first.start * 1000) : null;
}

/**
 * The call as the API answers it; `stored` is its transcript as recorded (a call from before the
 * transcript left the snapshot has its turns in the context instead). The turns told and the ones
 * left out: the actor's count, or the transcript's length where the actor's last write is behind it
 * (a crash between a turn's record and the next checkpoint).
 */
export function toObject(view: ActorView, stored: Turn[] = []): VoiceCallObject {
  const c = facts(view)!;
  const transcript = [...(c.turns ?? []), ...stored];
  const told = Math.max(c.turnCount ?? 0, (c.turns?.length ?? 0) + (c.turnsDropped ?? 0), transcript.length);
  const dropped = told - transcript.length;
  const status: CallStatus = view.context ? c.status : 'queued';
  const ended = c.endedAt ?? null;
  return {
    id: c.callId,
    object: 'voice.call',
    status,
    model: c.model,
    to: c.to,
    from: c.from,
    direction: c.direction ?? 'outbound',
    created_at: Math.floor(c.createdAt / 1000),
    max_duration_seconds: Math.ceil(c.maxDurationMs / 1000),
    metadata: c.metadata ?? c.spec.metadata ?? {},
    end_reason: c.endReason ?? null,
    dial_started_at: seconds(c.dialStartedAt),
    ringing_at: seconds(c.ringingAt),
    answered_at: seconds(c.answeredAt),
    ended_at: seconds(ended),
    duration_seconds: c.answeredAt && ended !== null ? Math.max(0, Math.round((ended - c.answeredAt) / 100) / 10) : c.answeredAt ? null : 0,
    billed_seconds: c.billedSeconds ?? null,
    cost_cents: c.costMicrocents === null || c.costMicrocents === undefined ? null : centsOf(c.costMicrocents),
    carrier_duration_seconds: c.carrierDurationSeconds ?? null,
    transferred_to: c.endReason === 'transferred' ? (c.transferTo ?? null) : null,
    answered_by: c.answeredBy?.answeredBy ?? null,
    answered_by_detection: c.answeredBy ? { source: c.answeredBy.source, detail: c.answeredBy.detail, decision_ms: c.answeredBy.decisionMs } : null,
    transcript,
    transcript_truncated: dropped > 0,
    outcome: { actions: c.actions ?? [], final_state: c.agentState ?? null },
    metrics: {
      turn_latency_ms: quantiles(c.latencies ?? []),
      turn_stages_ms: stageQuantiles(transcript),
      answer_to_first_frame_ms: firstFrameMs(transcript),
      interruptions: c.interruptions ?? 0,
      turns: told,
      turns_dropped: dropped,
    },
    analysis: analysisOf(c, transcript, ended !== null && !['queued', 'dialing', 'ringing', 'in_progress'].includes(status)),
  };
}
