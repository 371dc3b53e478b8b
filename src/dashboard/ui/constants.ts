// Closed lists the server also holds (test/dashboard/bundle.test.ts keeps them equal); copied so
// the bundle does not pull server modules in.
export const SCOPES = ['*', 'chat', 'audio', 'intent', 'voice', 'embeddings', 'models'] as const;
export const WEBHOOK_EVENTS = [
  'low_balance',
  'topup',
  'rate_limit_exceeded',
  'key_expired',
  'usage_spike',
  'transcription.completed',
  'transcription.failed',
  'call.answered',
  'call.answered_by',
  'call.action',
  'call.ended',
  'call.transferred',
  'call.analyzed',
  'batch.started',
  'batch.paused',
  'batch.resumed',
  'batch.completed',
] as const;
export const USAGE_GROUPS = ['day', 'model', 'key_prefix', 'member', 'end_user'] as const;
/** The largest recording an upload may be (the server's UPLOAD_LIMIT_BYTES, src/http/uploads.ts). */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;
/** A voice call's statuses (machines/voice-call.machine.ts's CALL_STATUSES), in their order. */
export const CALL_STATUSES = ['queued', 'dialing', 'ringing', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'canceled'] as const;
/** A voice batch's numbers' statuses (src/voice/batches/rows.ts's ROW_STATUSES), in their order. */
export const ROW_STATUSES = ['queued', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'voicemail', 'canceled', 'invalid'] as const;
/** The outcomes a batch may retry (its `retry.on`: src/voice/batches/pacing.ts's RETRYABLE). */
export const RETRY_OUTCOMES = ['busy', 'no_answer', 'failed', 'voicemail'] as const;
