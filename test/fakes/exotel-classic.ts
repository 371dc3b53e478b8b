// The fake Exotel's v1 API (test/fakes/exotel.ts serves it), as Exotel documents it and
// /work/shared/reference/voice.md records: `POST /v1/Accounts/{sid}/Calls/connect[.json]` (form,
// Basic auth) with `From`, `CallerId` (an ExoPhone of the account, E.164 or 0XXXXXXXXXX), `Url` (a
// flow of the account: http://my.exotel.com/{sid}/exoml/start_voice/{app_id}), `CallType`,
// `TimeLimit`, `TimeOut`, `CustomField`, `StatusCallback`, `StatusCallbackEvents[]` (`terminal`,
// `answered`), `StatusCallbackContentType`; the call's details at `GET …/Calls/{CallSid}[.json]`.
// And what the account set in its flow: the Voicebot applet's URL, a ws(s):// URL, or an https://
// one that answers the stream URL (`{"url": …}`) when asked with the call's details.

/** A stream's audio: PCM16 at 8, 16 or 24 kHz (the stream URL's `?sample-rate=`), or μ-law. */
export type Format = { encoding: 'pcm16' | 'mulaw'; rate: 8000 | 16000 | 24000 };

/** Exotel's time format (`YYYY-MM-DD HH:mm:ss`), in IST as Indian accounts read it. */
export const exotelTime = (ms: number): string => new Date(ms + 5.5 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');

/** An ExoPhone as one number, whichever way it is written (+91XXXXXXXXXX or 0XXXXXXXXXX); null: not one. */
export function exophoneOf(n: string | null): string | null {
  const m = /^(?:\+91|0)([1-9][0-9]{9})$/.exec(n ?? '');
  return m ? m[1]! : null;
}

const urlOf = (s: string | null): URL | null => {
  try {
    return new URL(s ?? '');
  } catch {
    return null;
  }
};

const V1_EVENTS = new Set(['terminal', 'answered']);
const CONTENT_TYPES = new Set(['multipart/form-data', 'application/json']);

/** Why Exotel would refuse this v1 connect form, or null; `flows` are the account's app ids. */
export function classicRefusal(form: URLSearchParams, account: { sid: string; exophones: string[]; flows: ReadonlySet<string> }): string | null {
  if (!/^\+[1-9][0-9]{6,14}$|^0[1-9][0-9]{9}$/.test(form.get('From') ?? '')) return 'From must be a phone number (E.164 preferred)';
  const callerId = exophoneOf(form.get('CallerId'));
  if (!callerId || !account.exophones.some((e) => exophoneOf(e) === callerId)) return 'CallerId must be one of the account’s ExoPhones';
  const flow = new RegExp(`^https?://my\\.exotel\\.com/${account.sid}/exoml/start_voice/([0-9]+)$`).exec(form.get('Url') ?? '');
  if (!flow) return 'Url must be http://my.exotel.com/{sid}/exoml/start_voice/{app_id}';
  if (!account.flows.has(flow[1]!)) return `no flow ${flow[1]} in this account`;
  if (form.has('StreamUrl') || form.has('streamurl')) return 'a flow call takes no StreamUrl: the Voicebot applet in the flow holds it';
  if (form.has('CallType') && !['trans', 'promo'].includes(form.get('CallType')!)) return 'CallType is trans or promo';
  for (const [field, max] of [
    ['TimeLimit', 14_400],
    ['TimeOut', 3600],
  ] as const) {
    if (!form.has(field)) continue;
    const n = Number(form.get(field));
    if (!Number.isInteger(n) || n < 1 || n > max) return `${field} must be 1-${max} seconds`;
  }
  if ((form.get('CustomField') ?? '').length > 128) return 'CustomField is at most 128 characters';
  if (form.has('StatusCallback') && !urlOf(form.get('StatusCallback'))?.protocol.startsWith('http')) return 'StatusCallback must be a URL';
  const events = form.getAll('StatusCallbackEvents[]');
  if (!events.every((e) => V1_EVENTS.has(e))) return 'StatusCallbackEvents[] are terminal and answered';
  const type = form.get('StatusCallbackContentType');
  if (type !== null && !CONTENT_TYPES.has(type)) return 'StatusCallbackContentType is multipart/form-data or application/json';
  return null;
}

/** The app id of a v1 call's Url. */
export const appIdOf = (url: string): string => url.slice(url.lastIndexOf('/') + 1);

/**
 * The stream the flow's Voicebot applet opens for a call: its URL (a ws(s):// one as set, or what an
 * https:// one answers when asked with the call's details), the start's custom parameters (the
 * URL's query: at most 3, 256 characters) and the stream's format (its `sample-rate`). Null: none
 * (the applet's URL failed), which Exotel treats as a refused stream.
 */
export async function voicebotStream(
  applet: string,
  call: { sid: string; from: string; to: string; customField: string; direction?: string },
  formatOf: (url: URL) => Format,
): Promise<{ url: string; parameters: Record<string, string>; format: Format } | null> {
  let target = urlOf(applet);
  if (target && /^https?:$/.test(target.protocol)) {
    const ask = new URL(target);
    const query = { CallSid: call.sid, CallFrom: call.from, CallTo: call.to, Direction: call.direction ?? 'outbound-api', CustomField: call.customField };
    for (const [k, v] of Object.entries(query)) ask.searchParams.set(k, v);
    const res = await fetch(ask, { signal: AbortSignal.timeout(5000) }).catch(() => null);
    const body = res?.ok ? ((await res.json().catch(() => null)) as { url?: unknown } | null) : null;
    target = typeof body?.url === 'string' ? urlOf(body.url) : null;
  }
  if (!target || !/^wss?:$/.test(target.protocol) || target.toString().length > 600) return null;
  if ([...target.searchParams].length > 3 || target.search.length > 257) return null;
  return { url: target.toString(), parameters: Object.fromEntries(target.searchParams), format: formatOf(target) };
}
