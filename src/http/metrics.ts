// Prometheus metrics through prom-client, in a registry owned by the app (no global default
// registry, so tests and several apps in one process never share counters).
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface HttpMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  duration: Histogram<'method' | 'route' | 'status'>;
  /** Webhook delivery attempts by outcome (ok, failed). */
  webhookDeliveries: Counter<'outcome'>;
  /** Webhook events accepted but never attempted, by reason (queue_full, endpoint_disabled, endpoint_removed). */
  webhookDropped: Counter<'reason'>;
  /** Webhooks disabled automatically after 10 consecutive failures. */
  webhookDisabled: Counter<string>;
}

export function createMetrics(): HttpMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gateway_' });
  const requests = new Counter({
    name: 'gateway_http_requests_total',
    help: 'HTTP requests by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'gateway_http_request_duration_seconds',
    help: 'HTTP request latency by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const webhookDeliveries = new Counter({
    name: 'gateway_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome (ok: a 2xx; failed: anything else).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const webhookDropped = new Counter({
    name: 'gateway_webhook_events_dropped_total',
    help: 'Webhook events accepted but never attempted, by reason.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const webhookDisabled = new Counter({
    name: 'gateway_webhook_endpoints_disabled_total',
    help: 'Webhooks disabled automatically after 10 consecutive failed deliveries.',
    registers: [registry],
  });
  return { registry, requests, duration, webhookDeliveries, webhookDropped, webhookDisabled };
}
