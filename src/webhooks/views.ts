// Webhooks and their delivery attempts as /portal/webhooks answers them. No imports: the
// dashboard's bundle (src/dashboard, browser types only) reads these types too.

export interface WebhookView {
  id: number;
  url: string;
  events: string[];
  status: 'enabled' | 'disabled';
  consecutive_failures: number;
  created_at: string;
  last_delivery_at: string | null;
  disabled_at: string | null;
}

export interface DeliveryView {
  id: string;
  event_id: string;
  event: string;
  ts: string;
  ok: boolean;
  status_code: number | null;
  error: string | null;
  latency_ms: number;
}

export interface TestOutcome {
  event_id: string;
  ok: boolean;
  status_code: number | null;
  error: string | null;
  latency_ms: number;
}
