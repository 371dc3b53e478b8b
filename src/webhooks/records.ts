// How webhooks are stored. Three collections:
// - `webhooks`: the endpoint's settings (url, events, secret) and its account. Its state (enabled or
//   disabled, the failure counter) is the endpoint actor's (`actors`, kind `webhook`).
// - `webhook_outbox`: one document per (event, subscribed endpoint) accepted for delivery, holding
//   the exact bytes to send. Written before the emitting service goes on; deleted by the endpoint
//   actor once the attempt is made (or the endpoint is disabled or removed). What is here after a
//   crash is delivered after the restart.
// - `webhook_deliveries`: the delivery log, the last `deliveryLogSize` attempts per endpoint.
import { randomBytes } from 'node:crypto';
import type { AccountEventName } from '../shared/events.ts';
import type { Collection, Store } from '../store/port.ts';

export const ACTOR_KIND = 'webhook';

export const EVENT_NAMES: readonly AccountEventName[] = [
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
];

export interface WebhookDoc {
  _id: number;
  /** The account: 'user:<id>' or 'org:<id>'. */
  owner: string;
  owner_type: 'user' | 'org';
  owner_id: number;
  url: string;
  events: string[];
  /** `whsec_…`: needed in clear to sign; shown only at creation, never logged. */
  secret: string;
  created_at: Date;
  updated_at: Date;
  [k: string]: unknown;
}

export interface OutboxDoc {
  /** `${webhook_id}:${event_id}`: an event is queued once per endpoint. */
  _id: string;
  webhook_id: number;
  event_id: string;
  event: string;
  /** The exact JSON body that is signed and sent. */
  body: string;
  created_at: Date;
  [k: string]: unknown;
}

export interface DeliveryDoc {
  /** `${webhook_id}:${time}${random}`: sorts by time within an endpoint. */
  _id: string;
  webhook_id: number;
  event_id: string;
  event: string;
  ts: Date;
  ok: boolean;
  status_code: number | null;
  error: string | null;
  latency_ms: number;
  [k: string]: unknown;
}

export interface WebhookCollections {
  webhooks: Collection<WebhookDoc>;
  outbox: Collection<OutboxDoc>;
  deliveries: Collection<DeliveryDoc>;
}

export function webhookCollections(store: Store): WebhookCollections {
  return {
    webhooks: store.collection<WebhookDoc>('webhooks'),
    outbox: store.collection<OutboxDoc>('webhook_outbox'),
    deliveries: store.collection<DeliveryDoc>('webhook_deliveries'),
  };
}

export async function createWebhookIndexes(c: WebhookCollections): Promise<void> {
  await c.webhooks.createIndex({ keys: { owner: 1, _id: 1 } });
  await c.outbox.createIndex({ keys: { webhook_id: 1, created_at: 1 } });
  await c.outbox.createIndex({ keys: { created_at: 1 } });
  await c.deliveries.createIndex({ keys: { webhook_id: 1, _id: 1 } });
}

/** A unique event id that sorts by time: `evt_` + ms (base 36) + 64 random bits. */
export function newEventId(nowMs: number): string {
  return `evt_${nowMs.toString(36).padStart(9, '0')}${randomBytes(8).toString('hex')}`;
}

export function deliveryId(webhookId: number, nowMs: number): string {
  return `${webhookId}:${nowMs.toString(36).padStart(9, '0')}${randomBytes(4).toString('hex')}`;
}

/** The delivered body: `id`, `event` and `ts` (Unix seconds) first, then the event's fields. */
export function eventBody(id: string, event: string, tsSeconds: number, fields: Record<string, unknown>): string {
  const { id: _i, event: _e, ts: _t, ...rest } = fields;
  return JSON.stringify({ id, event, ts: tsSeconds, ...rest });
}
