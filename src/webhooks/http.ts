// One signed POST to a receiver. The body is the exact bytes stored in the outbox; the signature is
// computed over those bytes. The whole exchange (DNS, connect, TLS, request, answer, reading the
// answer's body) has one deadline; redirects are never followed (a 3xx is a failure); the answer's
// body is read to free the connection, at most 64 KiB, and never kept.
import { createHmac } from 'node:crypto';
import { Agent, request, errors as undiciErrors } from 'undici';
import { BLOCKED_CODE, checkWebhookUrl, safeLookup, WebhookUrlError, type AddressPolicy } from './address.ts';

export interface DeliveryOutcome {
  ok: boolean;
  /** The receiver's status, or null when no answer came. */
  status_code: number | null;
  /** Why it failed without an answer: timeout, connection_refused, tls_error, blocked_address, dns_error, ... */
  error: string | null;
  latency_ms: number;
}

export function sign(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** The headers of a signed POST of `bytes` (a webhook's, a voice call's tool request: src/voice/tool-requests.ts). */
export function signedHeaders(secret: string, event: string, bytes: Buffer): Record<string, string> {
  return {
    'content-type': 'application/json',
    'content-length': String(bytes.length),
    'user-agent': 'inference-gateway-webhooks/1',
    'x-service-event': event,
    'x-service-signature': sign(secret, bytes),
  };
}

/** The agent every signed POST goes through: each new connection resolves through the checking lookup and connects to what it checked. */
export function checkedAgent(policy: AddressPolicy, timeoutMs: number): Agent {
  return new Agent({
    connect: { lookup: safeLookup(policy) as never, timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 30_000,
    connections: 64,
  });
}

const MAX_ANSWER_BYTES = 64 * 1024;

export class WebhookHttp {
  private readonly agent: Agent;

  constructor(
    private readonly policy: AddressPolicy,
    private readonly timeoutMs: number,
  ) {
    this.agent = checkedAgent(policy, timeoutMs);
  }

  /** POSTs `body` signed with `secret`; never throws. */
  async post(rawUrl: string, secret: string, event: string, body: string): Promise<DeliveryOutcome> {
    const started = performance.now();
    const done = (ok: boolean, status_code: number | null, error: string | null): DeliveryOutcome => ({
      ok,
      status_code,
      error,
      latency_ms: Math.round(performance.now() - started),
    });
    let url: URL;
    try {
      url = checkWebhookUrl(rawUrl, this.policy);
    } catch (err) {
      return done(false, null, err instanceof WebhookUrlError ? err.reason : 'invalid_url');
    }
    const bytes = Buffer.from(body, 'utf8');
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: this.agent,
        signal,
        headers: signedHeaders(secret, event, bytes),
        body: bytes,
      }); // undici follows no redirects without its redirect interceptor
      try {
        await res.body.dump({ limit: MAX_ANSWER_BYTES, signal });
      } catch {
        // An answer that is too long or too slow to read: the status decided already, unless the
        // deadline passed (checked below).
      }
      if (signal.aborted) return done(false, res.statusCode, 'timeout');
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return done(ok, res.statusCode, ok ? null : `http_${res.statusCode}`);
    } catch (err) {
      return done(false, null, signal.aborted ? 'timeout' : classify(err));
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Why a request failed without an answer (`timeout`, `connection_refused`, `blocked_address`, …). */
export function classify(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e?.code ?? e?.cause?.code ?? '';
  if (code === BLOCKED_CODE) return 'blocked_address';
  if (e instanceof undiciErrors.HeadersTimeoutError || e instanceof undiciErrors.BodyTimeoutError || e instanceof undiciErrors.ConnectTimeoutError)
    return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || e instanceof undiciErrors.SocketError) return 'connection_reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_error';
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED)/.test(code) || /certificate|tls|ssl/i.test(e?.message ?? '')) return 'tls_error';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'unreachable';
  return 'request_failed';
}
