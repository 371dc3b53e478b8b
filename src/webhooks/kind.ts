// The webhook endpoint actor kind: one actor per endpoint (`machines/webhook-endpoint.machine.ts`),
// its effects bound to the deliverer. Webhooks (index.ts) builds it, src/composition.ts registers
// it; the outbox and the portal service reach an endpoint's actor through a typed ref,
// `endpoint(webhookId)`.
import { fromPromise } from 'xstate';
import type { ActorKind, ActorRef } from '../actors/runtime.ts';
import { version, webhookEndpointMachine, type DeliverBatchInput, type DeliverBatchOutput } from '../../machines/webhook-endpoint.machine.ts';
import type { WebhookDeliverer } from './deliverer.ts';
import { ACTOR_KIND } from './records.ts';

export type WebhookKind = ActorKind<typeof webhookEndpointMachine>;
/** The actor of endpoint `webhookId`. */
export type EndpointRef = (webhookId: number) => ActorRef<WebhookKind>;

export function webhookEndpointKind(deliverer: WebhookDeliverer): WebhookKind {
  return {
    kind: ACTOR_KIND,
    machine: webhookEndpointMachine,
    version,
    // A deleted endpoint's actor ends in 'removed'; the sweep deletes it a day later. Enabled and
    // disabled endpoints wait in idle states and are never expired.
    retainFinishedMs: 86_400_000,
    provide: () => ({
      actors: {
        deliverBatch: fromPromise<DeliverBatchOutput, DeliverBatchInput>(({ input }) => deliverer.deliverBatch(input)),
        discardQueue: fromPromise<number, { webhookId: number }>(({ input }) => deliverer.discardQueue(input)),
      },
      actions: {
        disabled: ({ context }) => deliverer.disabled(context.webhookId),
      },
    }),
  };
}
