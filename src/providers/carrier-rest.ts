// The carriers' REST calls (twilio, exotel): HTTP Basic, form-encoded bodies, a JSON answer, bounded
// in time, never redirected. An error answer is an Error naming the carrier and its status (the
// caller fails over to the next route, or logs it); 401 and 403 are `CarrierCredentialsRefused`.
import { CarrierCredentialsRefused } from './carrier.ts';

export type CarrierRest = (method: 'GET' | 'POST', path: string, form?: URLSearchParams) => Promise<Record<string, unknown>>;

export function carrierRest(carrier: string, baseUrl: string, credentials: { user: string; password: string }, timeoutMs = 10_000): CarrierRest {
  const base = baseUrl.replace(/\/+$/, '');
  const authorization = `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`;
  return async (method, path, form) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: form ? { authorization, 'content-type': 'application/x-www-form-urlencoded' } : { authorization },
      ...(form ? { body: form.toString() } : {}),
      redirect: 'error',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if (res.status === 401 || res.status === 403) throw new CarrierCredentialsRefused(carrier, res.status, text.slice(0, 200));
    if (!res.ok) throw new Error(`${carrier} answered ${res.status}: ${text.slice(0, 200)}`);
    const body = JSON.parse(text) as unknown;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new Error(`${carrier} answered something other than a JSON object`);
    return body as Record<string, unknown>;
  };
}
