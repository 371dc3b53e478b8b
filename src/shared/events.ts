// Account events (low_balance, topup, rate_limit_exceeded, key_expired, usage_spike, and ours:
// transcription.completed and transcription.failed, call.answered, call.action and call.ended). Services emit
// them through this port; the webhook subsystem (src/webhooks/outbox.ts) implements it with a
// durable outbox.

export type AccountEventName =
  | 'low_balance'
  | 'topup'
  | 'rate_limit_exceeded'
  | 'key_expired'
  | 'usage_spike'
  | 'transcription.completed'
  | 'transcription.failed'
  | 'call.answered'
  | 'call.action'
  | 'call.answered_by'
  | 'call.ended'
  | 'call.transferred'
  | 'call.analyzed'
  | 'batch.started'
  | 'batch.paused'
  | 'batch.resumed'
  | 'batch.completed';

export interface AccountEvent {
  event: AccountEventName;
  /** The account the event belongs to: a user or an organization. */
  owner: { type: 'user' | 'org'; id: number };
  /** Plain JSON: scalars, and for call.ended and call.action the call's transcript, outcome and entities. */
  fields: Record<string, unknown>;
  /** Only to this endpoint of the account, whatever it subscribes to (a voice call's `webhook_id`). */
  webhookId?: number;
}

export interface EventSink {
  emit(event: AccountEvent): Promise<void>;
}
