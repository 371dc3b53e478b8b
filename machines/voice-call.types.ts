// The voice call actor's vocabulary (machines/voice-call.machine.ts): its statuses and end reasons,
// input and context, the effects' inputs and outputs, and the events it hears. Kept apart from the
// machine so the machine file holds only its states and transitions.

export const CALL_STATUSES = ['queued', 'dialing', 'ringing', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'canceled'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];
export type FinalStatus = Extract<CallStatus, 'completed' | 'busy' | 'no_answer' | 'failed' | 'canceled'>;

export type EndReason =
  | 'callee_hangup'
  | 'agent_hangup'
  | 'api_hangup'
  | 'max_duration'
  | 'silence_timeout'
  | 'insufficient_credit'
  | 'ring_timeout'
  | 'dial_busy'
  | 'dial_failed'
  | 'destination_not_allowed'
  | 'carrier_unavailable'
  /** The carrier's API refused the route's credentials (401/403): its account or token is wrong, not an outage. */
  | 'carrier_credentials_refused'
  | 'media_timeout'
  /** The carrier's stream came in a format the gateway cannot take (Exotel's media_format): refused, not misread. */
  | 'media_format_unsupported'
  | 'gateway_restart'
  /** The carrier bridged the callee to another number (src/voice/transfer.ts): the gateway's part of the call is over. */
  | 'transferred'
  /** An answering machine or a call-screening bot answered; the call did what its `voicemail` asked (hung up, or left its message). */
  | 'voicemail';

/** Who answered (issue 41 §1): the gateway's own detector's decision, or the carrier's (Twilio's AMD). */
export type AnsweredBy = 'human' | 'machine' | 'unknown';
export interface AnsweredByNews {
  answeredBy: AnsweredBy;
  /** What decided it: the detector's reason (`beep`, `long_greeting`…) or the carrier's own value (Twilio's `machine_end_beep`…). */
  detail: string;
  source: 'gateway' | 'twilio';
  /** The answer → the decision, ms. */
  decisionMs: number;
}

/**
 * Opaque to the machine: what the effects need (payer, hold, pricing, the call's options), plain
 * JSON. Its fields are the kind's to name (src/voice/kind.ts builds `voiceCallMachineOf<its spec>()`),
 * so the effects read them typed; the machine only carries them.
 */
export type CallSpec = object;

export interface VoiceCallInput<Spec extends CallSpec = CallSpec> {
  callId: string;
  /** The paying account (wallet id): the only one that may read or control the call. */
  account: string;
  model: string;
  to: string;
  from: string | null;
  createdAt: number;
  /** The call's maximum answered time: the client's max_duration_seconds, or less when the wallet covered less. */
  maxDurationMs: number;
  /** The wallet, not the client, set maxDurationMs: reaching it ends `insufficient_credit`. */
  creditLimited: boolean;
  ringTimeoutMs: number;
  spec: Spec;
  /**
   * The client's metadata: the call's, shown by its view; never an effect's input (the snapshot
   * keeps an in-flight effect's input, so a field there is stored twice). Absent in calls created
   * before it moved here from the kind's spec.
   */
  metadata?: Record<string, string>;
  /** `inbound`: a call to one of the model's numbers (src/voice/inbound.ts), whose `from` is the caller and `to` the number; absent: outbound. */
  direction?: 'inbound';
  /** The call asked for an analysis (its own `analysis` or its model's): after the charge it goes through `analyzing`. */
  analyze?: boolean;
}

/**
 * How the integrator answered a tool request (src/voice/tool-requests.ts): 2xx, 4xx, anything else,
 * or nothing in time; `interrupted`: the gateway died with it in flight (src/voice/tool-journal.ts).
 */
export type ToolStatus = 'ok' | 'refused' | 'failed' | 'timeout' | 'interrupted';

/** A `tool` turn's request to the integrator and its answer (a pack's business action, or an LLM's tool call). */
export interface ToolExchange {
  /** The request's id (an LLM's tool call id, or `act_…` for a pack's action): the integrator's key to deduplicate by. */
  id: string;
  type: 'function' | 'action';
  name: string;
  arguments: unknown;
  status: ToolStatus;
  /** The integrator's HTTP status, null when none came. */
  status_code: number | null;
  /** Why no answer came (`timeout`, `connection_refused`, …), or the `http_<status>` of a refusal. */
  error: string | null;
  /** The answer's body as text (at most 4,000 characters here). */
  result: string;
  latency_ms: number;
}

/** One transcript turn; times are seconds from the answer. */
export interface Turn {
  /** `tool`: a request the agent made to the integrator during the call, and its answer (`tool`). */
  role: 'agent' | 'callee' | 'tool';
  text: string;
  /** Agent turns: what the callee heard of `text` (all of it unless interrupted). */
  heard_text?: string;
  interrupted?: boolean;
  start: number;
  end: number;
  response_id?: string;
  intent?: string | null;
  entities?: Record<string, string | number>;
  /** Callee DTMF: the digits pressed (the turn's text is them too). */
  dtmf?: string;
  /** Agent turns answering the callee: the end of the callee's speech (or last key) → this reply's first frame to the carrier, ms. */
  latency_ms?: number;
  /** Agent turns answering the callee: `latency_ms` by stage (they add up to it; src/voice/turn-stages.ts says what each measures). */
  stages?: TurnStages;
  /** A `tool` turn's request and answer (its `start`: sent; `end`: answered). */
  tool?: ToolExchange;
}

/** Where a turn's latency goes, ms, in order. */
export type TurnStages = Record<'endpointing_ms' | 'queued_ms' | 'recognition_ms' | 'agent_ms' | 'synthesis_ms' | 'first_frame_ms', number>;

export interface OutcomeAction {
  action: string;
  intent: string | null;
  entities: Record<string, string | number>;
  at: number;
  /** How the integrator answered the action's request; absent when the call named no endpoint for it. */
  status?: ToolStatus;
}

export interface VoiceCallContext<Spec extends CallSpec = CallSpec> extends VoiceCallInput<Spec> {
  status: CallStatus;
  endReason: EndReason | null;
  /** The latest time an event told (epoch ms): the base the deadlines are armed from. */
  now: number;
  carrierCallId: string | null;
  dialStartedAt: number | null;
  ringingAt: number | null;
  answeredAt: number | null;
  endedAt: number | null;
  /** The last heartbeat of the media loop: what a gateway restart bills up to. */
  lastAliveAt: number | null;
  billedSeconds: number | null;
  costMicrocents: number | null;
  /** What the carrier says the call lasted (s), when it was asked: a call finalized after a restart. */
  carrierDurationSeconds?: number | null;
  /** The turns the live side told (each recorded in the call's transcript first, as far as it keeps them); absent in version 1 snapshots. */
  turnCount?: number;
  /** Version 1 snapshots only: the transcript itself, and the turns it left out. */
  turns?: Turn[];
  turnsDropped?: number;
  actions: OutcomeAction[];
  /** The agent's conversation state (the intent pack's) at the last turn. */
  agentState: string | null;
  /** End of callee speech → first agent audio, ms, per turn (the latest MAX_LATENCIES). */
  latencies: number[];
  interruptions: number;
  /** Who answered, once decided (calls that ask for answering-machine detection: their `voicemail`); absent before. */
  answeredBy?: AnsweredByNews | null;
  /** The number the call is being (or was) handed to: set when a transfer is asked (src/voice/transfer.ts). */
  transferTo?: string | null;
  /** What the call's analysis came to (src/voice/analysis.ts); absent until it ended, and on calls that asked for none. */
  analysis?: CallAnalysisResult | null;
  /** A hand-off the carrier was asked for, whose answer a restart lost (the finish then never hangs up). */
  handOffAsked?: boolean;
}

/** A value an analysis extracted: of the field's type, or null when the LLM gave none that validates. */
export type AnalysisValue = string | number | boolean | null;

/** What a call's analysis (issue 43 §2) came to, kept in its context: plain JSON, bounded (src/voice/analysis.ts). */
export interface CallAnalysisResult {
  /** `skipped`: the call had no conversation (no callee turn): nothing asked, nothing billed. */
  status: 'completed' | 'failed' | 'skipped';
  model: string | null;
  summary: string | null;
  fields: Record<string, AnalysisValue>;
  usage: { prompt_tokens: number; completion_tokens: number } | null;
  /** What the chat call was billed, µ¢ (0 unless completed). */
  costMicrocents: number;
  /** Upstream requests made (1 to the configured attempts). */
  attempts: number;
  error: { code: string; message: string } | null;
  /** When it ended (epoch ms). */
  at: number;
}

export interface AnalyzeInput<Spec extends CallSpec = CallSpec> {
  callId: string;
  model: string;
  spec: Spec;
  outcome: { actions: OutcomeAction[]; final_state: string | null };
}

/** A cold transfer: `by` the API (the agent says its hand-off line first) or the agent (its line already said). */
export interface TransferInput<Spec extends CallSpec = CallSpec> {
  callId: string;
  spec: Spec;
  model: string;
  to: string;
  by: 'api' | 'agent';
  /** When the media last lived (what a transfer the carrier never took bills up to, after a restart). */
  lastAliveAt: number | null;
}
/** `transferred`: the carrier took the hand-off at `at` (the gateway's seconds end there); false: it never did (a restart lost the media first). */
export interface TransferOutput {
  transferred: boolean;
  /** Not known to be transferred, but the carrier was asked at `at` before a restart lost its answer: the call may be the person's now. */
  asked?: boolean;
  at: number;
}

export interface DialInput {
  to: string;
  from: string | null;
  ringTimeoutMs: number;
  maxDurationMs: number;
}
/** `carrierCallId` null: nothing was dialled here (a restored actor without its media: the finalize follows). */
export interface DialOutput {
  carrierCallId: string | null;
  at: number;
}

export interface FinishInput<Spec extends CallSpec = CallSpec> {
  callId: string;
  /** The carrier's id of the call, when it was dialled (a restored call hangs it up there). */
  carrierCallId: string | null;
  model: string;
  status: FinalStatus;
  reason: EndReason;
  billedSeconds: number;
  spec: Spec;
  /** The call's outcome as the view shows it (the `call.ended` event carries it); absent in inputs stored before it. */
  outcome?: { actions: OutcomeAction[]; final_state: string | null };
  /** The number a `transferred` call was handed to. */
  transferTo?: string | null;
  /** The carrier was asked to hand the call off and a restart lost its answer: the call is not hung up. */
  handOffAsked?: boolean;
}
export interface FinishOutput {
  costMicrocents: number;
  /** The carrier's own duration of the call, when the finish asked it (an orphaned call hung up by its API). */
  carrierDurationSeconds?: number | null;
  at: number;
}

export interface NotifyInput<Spec extends CallSpec = CallSpec> {
  callId: string;
  model: string;
  to: string;
  answeredAt: number;
  spec: Spec;
}

/** The answer to `api.cancel` / `api.hangup` (the runtime's `ask`). */
export interface ControlReply {
  type: 'control.result';
  ok: boolean;
  status: CallStatus;
}

export type VoiceCallEvent =
  | { type: 'carrier.ringing'; now: number }
  | { type: 'carrier.answered'; now: number }
  /** The carrier says the call is over: before an answer with its status; after, the callee hung up (or the line dropped); `seconds` it counted bound the bill. */
  | { type: 'carrier.ended'; now: number; status?: 'busy' | 'no_answer' | 'failed'; reason?: EndReason; seconds?: number }
  | { type: 'api.cancel'; now: number }
  | { type: 'api.hangup'; now: number }
  /** A cold transfer to `to` (E.164, checked): the API's (answered as a control) or the agent's (a pack's escalation). */
  | { type: 'api.transfer'; now: number; to: string }
  | { type: 'agent.transfer'; now: number; to: string }
  /** The media loop ends the call: the agent closed it, silence, the media stream died or never came. */
  | { type: 'media.ending'; now: number; reason: EndReason }
  | { type: 'media.heartbeat'; now: number }
  | { type: 'turn'; now: number; turn: Turn; latencyMs?: number; interrupted?: boolean; agentState?: string }
  | { type: 'action'; now: number; action: OutcomeAction }
  | { type: 'runtime.resumed'; now: number; mode: 'resume' | 'finalize' }
  /** Who answered (the first decision counts; a repeated or later one changes nothing). */
  | ({ type: 'answered_by'; now: number } & AnsweredByNews);

export interface AnsweredByInput<Spec extends CallSpec = CallSpec> {
  callId: string;
  model: string;
  to: string;
  news: AnsweredByNews;
  spec: Spec;
}
