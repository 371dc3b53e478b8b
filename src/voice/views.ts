// A voice call as the API answers it (GET /v1/voice/calls/{id}, and the /portal routes that answer
// the same). Its only import is types of the call's machine, so the dashboard's bundle (browser
// types only) reads this type too.
import type { AnalysisValue, AnsweredBy, CallStatus, TurnStages, VoiceCallContext } from '../../machines/voice-call.machine.ts';

type Quantiles = { p50: number | null; p95: number | null };

export interface VoiceCallObject {
  id: string;
  object: 'voice.call';
  status: CallStatus;
  model: string;
  to: string;
  from: string | null;
  /** `inbound`: a call to one of the model's numbers (`from` the caller, `to` the number); `outbound`: placed by POST /v1/voice/call. */
  direction?: 'inbound' | 'outbound';
  created_at: number;
  max_duration_seconds: number;
  metadata: Record<string, string>;
  end_reason?: string | null;
  dial_started_at?: number | null;
  ringing_at?: number | null;
  answered_at?: number | null;
  ended_at?: number | null;
  duration_seconds?: number | null;
  billed_seconds?: number | null;
  cost_cents?: number | null;
  /** What the carrier says the call lasted (s): asked only of a call finalized after a restart; null otherwise. */
  carrier_duration_seconds?: number | null;
  /** The number a `transferred` call was handed to (src/voice/transfer.ts); null otherwise. */
  transferred_to?: string | null;
  /** The call's recording (src/voice/recordings.ts): null when the call was not recorded. */
  recording?: {
    available: boolean;
    status: 'recording' | 'ready' | 'none' | 'deleted';
    duration_seconds: number | null;
    url: string | null;
    expires_at: number | null;
  } | null;
  /** Who answered (a call that asked for answering-machine detection, its `voicemail`): null until decided, or when not asked. */
  answered_by?: AnsweredBy | null;
  /** How it was decided: by whom (`gateway` or `twilio`), its reason, and when (the answer → the decision, ms). */
  answered_by_detection?: { source: 'gateway' | 'twilio'; detail: string; decision_ms: number } | null;
  transcript?: VoiceCallContext['turns'];
  /** The transcript holds the call's first 200 turns only: the later ones were left out (`metrics.turns_dropped` says how many). */
  transcript_truncated?: boolean;
  outcome?: { actions: VoiceCallContext['actions']; final_state: string | null };
  metrics?: {
    /** The end of the callee's speech → the reply's first frame to the carrier, over the call's turns (the latest 200). */
    turn_latency_ms: Quantiles;
    /** The same turns' latency by stage (the agent turns' `stages`, over the transcript's turns). */
    turn_stages_ms: Record<keyof TurnStages, Quantiles>;
    /** The answer → the agent's first frame (its first turn's start); null before one played. */
    answer_to_first_frame_ms: number | null;
    interruptions: number;
    turns: number;
    turns_dropped: number;
  };
  /** What happened on the call, read after it ended (src/voice/analysis.ts); null: no analysis asked and no pack's outcome to give. */
  analysis?: CallAnalysisObject | null;
}

/** A call's analysis as the API answers it (docs/api/voice.md, Analysis). */
export interface CallAnalysisObject {
  /** `pending` until the call ended and its llm answered; `skipped`: no conversation to read. */
  status: 'pending' | 'completed' | 'failed' | 'skipped';
  /** `llm`: asked of `model`; `pack`: only what the intent pack decided, free. */
  source: 'llm' | 'pack';
  model: string | null;
  summary: string | null;
  fields: Record<string, AnalysisValue>;
  /** A pack's call (intent or hybrid agent): its main intent, the actions it took, the entities it heard; null otherwise. */
  intent: string | null;
  actions: string[] | null;
  entities: Record<string, string | number> | null;
  usage: { prompt_tokens: number; completion_tokens: number } | null;
  /** What the analysis's chat call was billed (0 when it failed, was skipped, or is the pack's). */
  cost_cents: number;
  attempts: number;
  error: { code: string; message: string } | null;
  completed_at: number | null;
}
