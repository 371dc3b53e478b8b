// Prometheus metrics through prom-client, in a registry owned by the app (no global default
// registry, so tests and several apps in one process never share counters).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface HttpMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  duration: Histogram<'method' | 'route' | 'status'>;
  /** A /v1 request's own time in the gateway (its duration less its waits on upstreams: src/http/overhead.ts), by route. */
  overhead: Histogram<'route'>;
  /** Requests Node's HTTP parser refused or timed out, before any route: by status and parser code. */
  clientErrors: Counter<'status' | 'reason'>;
  /** Open connections admitted by the caps. */
  connections: Gauge<string>;
  /** Connections refused by a cap (total, per_address). */
  connectionsRefused: Counter<'reason'>;
  /** Webhook delivery attempts by outcome (ok, failed). */
  webhookDeliveries: Counter<'outcome'>;
  /** Webhook events accepted but never attempted, by reason (queue_full, endpoint_disabled, endpoint_removed). */
  webhookDropped: Counter<'reason'>;
  /** Webhooks disabled automatically after 10 consecutive failures. */
  webhookDisabled: Counter<string>;
  /** Intent turns answered, by model, classification and the stage that decided. */
  intentTurns: Counter<'model' | 'classification' | 'classifier_used'>;
  /** Realtime transcription sockets open on this instance, and the audio seconds their sessions were charged. */
  realtimeSessions: Gauge<string>;
  realtimeChargedSeconds: Counter<string>;
  /** Time of the classification cascade of a turn (without the session and billing), by the stage that decided. */
  intentCascade: Histogram<'classifier_used'>;
  /** Voice calls: each callee→agent turn's latency, by stage and whole, and the answer → the agent's first frame (src/voice/turn-stages.ts). */
  voiceTurnStages: Histogram<'stage'>;
  voiceTurnLatency: Histogram<string>;
  voiceFirstFrame: Histogram<string>;
}

/** A voice turn's times: tens of ms (a stage) to seconds (an offline recognition, an LLM). */
const VOICE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];

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
  const overhead = new Histogram({
    name: 'gateway_http_overhead_seconds',
    help: "A /v1 request's own time in the gateway: its duration less its waits on upstreams (a stream's whole life; the x-gateway-overhead-ms header), by route pattern.",
    labelNames: ['route'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  const clientErrors = new Counter({
    name: 'gateway_http_client_errors_total',
    help: "Requests refused before any route: malformed HTTP, oversized headers, timeouts; by status and the parser's code.",
    labelNames: ['status', 'reason'] as const,
    registers: [registry],
  });
  const connections = new Gauge({
    name: 'gateway_http_connections',
    help: 'Open HTTP connections (admitted by the connection caps).',
    registers: [registry],
  });
  const realtimeSessions = new Gauge({
    name: 'gateway_realtime_sessions',
    help: 'Open realtime transcription sessions (WS /v1/audio/transcriptions/stream) on this instance.',
    registers: [registry],
  });
  const realtimeChargedSeconds = new Counter({
    name: 'gateway_realtime_charged_seconds_total',
    help: 'Audio seconds charged for realtime sessions closed on this instance.',
    registers: [registry],
  });
  const connectionsRefused = new Counter({
    name: 'gateway_http_connections_refused_total',
    help: 'Connections refused with a 503 by a cap: total (http.maxConnections) or per_address (http.maxConnectionsPerAddress).',
    labelNames: ['reason'] as const,
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
  const intentTurns = new Counter({
    name: 'gateway_intent_turns_total',
    help: 'Intent turns answered by model, classification (KNOWN, AMBIGUOUS, UNKNOWN, OUT_OF_SCOPE) and classifier_used: a rising UNKNOWN or OUT_OF_SCOPE share shows what the pack does not cover.',
    labelNames: ['model', 'classification', 'classifier_used'] as const,
    registers: [registry],
  });
  const intentCascade = new Histogram({
    name: 'gateway_intent_cascade_seconds',
    help: 'Classification cascade time of an intent turn (deterministic, local model and any LLM fallback; not the session or billing), by the stage that decided.',
    labelNames: ['classifier_used'] as const,
    buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.1, 1, 5],
    registers: [registry],
  });
  const voiceTurnStages = new Histogram({
    name: 'gateway_voice_turn_stage_seconds',
    help: "A voice call's callee→agent turn by stage: endpointing (end of speech → utterance cut), queued, recognition, agent (decision or an LLM's first chunk), synthesis (first audio in hand), first_frame (→ the carrier).",
    labelNames: ['stage'] as const,
    buckets: VOICE_BUCKETS,
    registers: [registry],
  });
  const voiceTurnLatency = new Histogram({
    name: 'gateway_voice_turn_latency_seconds',
    help: "A voice call's callee→agent turn: the end of the callee's speech → the reply's first frame to the carrier (the stages' sum; the call's turn_latency_ms).",
    buckets: VOICE_BUCKETS,
    registers: [registry],
  });
  const voiceFirstFrame = new Histogram({
    name: 'gateway_voice_answer_to_first_frame_seconds',
    help: "A voice call's answer → the agent's first frame to the carrier.",
    buckets: VOICE_BUCKETS,
    registers: [registry],
  });
  return {
    registry,
    voiceTurnStages,
    voiceTurnLatency,
    voiceFirstFrame,
    requests,
    duration,
    overhead,
    clientErrors,
    connections,
    connectionsRefused,
    webhookDeliveries,
    webhookDropped,
    webhookDisabled,
    intentTurns,
    intentCascade,
    realtimeSessions,
    realtimeChargedSeconds,
  };
}
