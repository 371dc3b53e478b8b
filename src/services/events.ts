// Account events (low_balance, topup, rate_limit_exceeded, key_expired, usage_spike). Services emit
// them through this port; the webhook subsystem implements it with a durable outbox. Until it is
// wired, the log sink records each event in the log (no delivery).
import type { Logger } from 'pino';

export type AccountEventName = 'low_balance' | 'topup' | 'rate_limit_exceeded' | 'key_expired' | 'usage_spike';

export interface AccountEvent {
  event: AccountEventName;
  /** The account the event belongs to: a user or an organization. */
  owner: { type: 'user' | 'org'; id: number };
  fields: Record<string, string | number | boolean | null>;
}

export interface EventSink {
  emit(event: AccountEvent): Promise<void>;
}

export function logEventSink(logger: Logger): EventSink {
  return {
    async emit(event) {
      logger.info({ account_event: event.event, owner: event.owner, fields: event.fields }, 'account event');
    },
  };
}
