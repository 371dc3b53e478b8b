// A `call.action` event per action a call's agent records (issue 41 §5): a pack's business action
// (CREATE_DISPUTE with its entities), an LLM's tool call, each with how the integrator answered it
// (`status`; null when the call named no endpoint for it). The call's actor as its live side sees it
// (as src/voice/transcript.ts's `recordingTurns`): every `action` event sent to the actor is also
// written to the webhook outbox (durable; delivered in the background), to the call's `webhook_id`
// or the account's endpoints subscribed to `call.action`. The live side records each action once; a
// crash loses the live side, so no action is announced twice.
import type { Logger } from 'pino';
import type { EventSink } from '../shared/events.ts';
import type { CallActor } from './call-line.ts';

export interface ActionEvents {
  events: EventSink;
  owner: { type: 'user' | 'org'; id: number };
  webhookId?: number | undefined;
  /** The call's fields every event carries (`call_id`, `model`). */
  fields: Record<string, string>;
  log: Logger;
}

export function announcingActions(actor: CallActor, to: ActionEvents): CallActor {
  return {
    send(event, opts) {
      if (event.type === 'action') {
        const { action, intent, entities, at, status } = event.action;
        void to.events
          .emit({
            event: 'call.action',
            owner: to.owner,
            ...(to.webhookId !== undefined ? { webhookId: to.webhookId } : {}),
            fields: { ...to.fields, action, intent, entities, status: status ?? null, at },
          })
          .catch((err: unknown) => to.log.warn({ err, action }, 'a call.action event was not written'));
      }
      return actor.send(event, opts);
    },
  };
}
