// One webhook endpoint as an actor: the spec's two states, `enabled` and `disabled`, and the
// consecutive-failure counter between them. Pure: the delivery of a batch of outbox events and the
// discarding of a disabled endpoint's queue are invoked by name and injected by the runtime
// (src/webhooks/kind.ts); this file does no I/O and reads no clock.
//
// - `enabled.idle` (tag 'idle', so it holds no lease): waits for `outbox.ready`.
// - `enabled.draining`: invokes `deliverBatch` for up to `min(batchSize, FAILURE_LIMIT - failures)`
//   queued events, so however the batch goes, no event is sent after the 10th consecutive failure.
//   The outcomes are folded in order: a 2xx resets the counter, anything else adds one; reaching
//   FAILURE_LIMIT moves to `disabled` — one transition of one actor, so exactly once. More queued
//   events (a full batch, or an `outbox.ready` that arrived meanwhile) drain again.
//   A restore re-runs the invoked batch (the events are still in the outbox; receivers dedupe by id).
// - `disabled.discarding` drops what is still queued (a disabled endpoint receives nothing), then
//   `disabled.idle` waits for `enable` (the dashboard's re-enable), which restarts the counter.
import { assign, fromPromise, setup } from 'xstate';

export const version = 1;

/** The spec: after 10 consecutive failed deliveries the webhook is disabled automatically. */
export const FAILURE_LIMIT = 10;

export interface WebhookEndpointInput {
  webhookId: number;
  /** Most events one drain step sends at once (concurrently). */
  batchSize: number;
}

export interface WebhookEndpointContext {
  webhookId: number;
  batchSize: number;
  consecutiveFailures: number;
  /** Epoch ms of the last completed delivery attempt (any outcome); null before the first. */
  lastDeliveryAt: number | null;
  /** Epoch ms of the automatic disabling; null while enabled. */
  disabledAt: number | null;
  /** How many times this endpoint was disabled automatically (one per crossing of the limit). */
  disabledCount: number;
  /** Drain steps started: with webhookId, the idempotency key of a batch. */
  attempt: number;
  /** An `outbox.ready` arrived while a batch was in flight: drain again afterwards. */
  pending: boolean;
}

export interface DeliverBatchInput {
  webhookId: number;
  attempt: number;
  max: number;
}

export interface DeliverBatchOutput {
  /** One per event sent, in the order the outcomes are counted: true for a 2xx. */
  outcomes: boolean[];
  /** Epoch ms when the batch finished. */
  at: number;
  /** The batch was full: more events may be queued. */
  more: boolean;
  /** The webhook no longer exists. */
  gone: boolean;
}

export type WebhookEndpointEvent = { type: 'outbox.ready' } | { type: 'enable' } | { type: 'remove' } | { type: 'runtime.resumed'; now: number };

/** The counter after folding `outcomes` into `failures`, stopping at the limit. */
export function foldOutcomes(failures: number, outcomes: readonly boolean[]): number {
  let n = failures;
  for (const ok of outcomes) {
    n = ok ? 0 : n + 1;
    if (n >= FAILURE_LIMIT) return FAILURE_LIMIT;
  }
  return n;
}

/** deliverBatch's output, from its done event: the params of the guards that read it. */
const batchOutput = ({ event }: { event: { output: DeliverBatchOutput } }) => event.output;

export const webhookEndpointMachine = setup({
  types: {
    context: {} as WebhookEndpointContext,
    events: {} as WebhookEndpointEvent,
    input: {} as WebhookEndpointInput,
  },
  actors: {
    // Placeholders: the runtime injects the real effects with machine.provide.
    deliverBatch: fromPromise<DeliverBatchOutput, DeliverBatchInput>(async () => {
      throw new Error('webhook-endpoint: deliverBatch not provided');
    }),
    discardQueue: fromPromise<number, { webhookId: number }>(async () => {
      throw new Error('webhook-endpoint: discardQueue not provided');
    }),
  },
  actions: {
    /** Told once per automatic disabling (logs, metrics); injected. */
    disabled: () => {},
  },
  // Of deliverBatch's output, which each use passes as the guard's params (`batchOutput`): a guard
  // named here is typed against every event of the machine, not the invoke's done event, which
  // alone carries a typed `output`.
  guards: {
    gone: (_, output: DeliverBatchOutput) => output.gone,
    reachesLimit: ({ context }, output: DeliverBatchOutput) => foldOutcomes(context.consecutiveFailures, output.outcomes) >= FAILURE_LIMIT,
    drainAgain: ({ context }, output: DeliverBatchOutput) => context.pending || output.more,
  },
}).createMachine({
  id: 'webhookEndpoint',
  context: ({ input }) => ({
    webhookId: input.webhookId,
    batchSize: input.batchSize,
    consecutiveFailures: 0,
    lastDeliveryAt: null,
    disabledAt: null,
    disabledCount: 0,
    attempt: 0,
    pending: false,
  }),
  initial: 'enabled',
  on: {
    remove: { target: '.removed' },
  },
  states: {
    enabled: {
      initial: 'idle',
      states: {
        idle: {
          tags: ['idle'],
          on: { 'outbox.ready': { target: 'draining' } },
        },
        draining: {
          entry: assign({ attempt: ({ context }) => context.attempt + 1, pending: false }),
          on: { 'outbox.ready': { actions: assign({ pending: true }) } },
          invoke: {
            id: 'deliverBatch',
            src: 'deliverBatch',
            input: ({ context }) => ({
              webhookId: context.webhookId,
              attempt: context.attempt,
              max: Math.max(1, Math.min(context.batchSize, FAILURE_LIMIT - context.consecutiveFailures)),
            }),
            onDone: [
              { guard: { type: 'gone', params: batchOutput }, target: '#webhookEndpoint.removed' },
              {
                guard: { type: 'reachesLimit', params: batchOutput },
                target: '#webhookEndpoint.disabled',
                actions: [
                  assign({
                    consecutiveFailures: FAILURE_LIMIT,
                    lastDeliveryAt: ({ event }) => event.output.at,
                    disabledAt: ({ event }) => event.output.at,
                    disabledCount: ({ context }) => context.disabledCount + 1,
                  }),
                  'disabled',
                ],
              },
              {
                guard: { type: 'drainAgain', params: batchOutput },
                target: 'draining',
                reenter: true,
                actions: assign({
                  consecutiveFailures: ({ context, event }) => foldOutcomes(context.consecutiveFailures, event.output.outcomes),
                  lastDeliveryAt: ({ context, event }) => (event.output.outcomes.length > 0 ? event.output.at : context.lastDeliveryAt),
                }),
              },
              {
                target: 'idle',
                actions: assign({
                  consecutiveFailures: ({ context, event }) => foldOutcomes(context.consecutiveFailures, event.output.outcomes),
                  lastDeliveryAt: ({ context, event }) => (event.output.outcomes.length > 0 ? event.output.at : context.lastDeliveryAt),
                }),
              },
            ],
            // The store failed: nothing is counted, the events stay queued for the next wake-up.
            onError: { target: 'idle' },
          },
        },
      },
    },
    disabled: {
      initial: 'discarding',
      states: {
        discarding: {
          invoke: {
            id: 'discardQueue',
            src: 'discardQueue',
            input: ({ context }) => ({ webhookId: context.webhookId }),
            onDone: { target: 'idle' },
            onError: { target: 'idle' },
          },
        },
        idle: {
          tags: ['idle'],
          on: {
            'outbox.ready': { target: 'discarding' },
            enable: {
              target: '#webhookEndpoint.enabled',
              actions: assign({ consecutiveFailures: 0, disabledAt: null, pending: false }),
            },
          },
        },
      },
    },
    removed: { type: 'final' },
  },
});
