// Exotel's long-standing v1 call API, which most Indian accounts place bot calls through: `POST
// /v1/Accounts/{sid}/Calls/connect.json` dials `From` and, once answered, runs the account's flow
// (`Url`: http://my.exotel.com/{sid}/exoml/start_voice/{app_id}), whose Voicebot applet opens the
// bidirectional stream; the call's details at `GET /v1/Accounts/{sid}/Calls/{CallSid}.json`.
// An `exotel` route with `app_id` uses it (src/providers/exotel/voice.ts); the newer "Connect Voice
// AI" API (lowercase paths, `streamurl`) is the route without one. This file is the v1 API's form
// and the reading of what Exotel says of a call's length, which both APIs share.
//
// How the call reaches its stream: the applet's URL is the account's, set once in its flow, so it
// cannot carry a call's id and token the way `streamurl` does. Exotel lets the applet's URL be an
// HTTPS endpoint that answers the WebSocket URL to open (`{"url": "wss://…"}`), asked with the
// call's details as query parameters (`CallSid`, `CallFrom`, `CallTo`, `Direction`, `CustomField`).
// The account points its Voicebot applet at the gateway's `GET /v1/voice/exotel/voicebot`
// (src/http/routes/v1-voice-exotel.ts): the gateway finds the call by `CustomField` (the call id,
// sent here) and believes the request only when its `CallSid` is the sid Exotel answered this
// dial with (known to Exotel and the gateway alone), then answers the call's stream URL with the
// id and one-time token in its query, which Exotel hands the bot as the start's custom_parameters,
// as on the newer API. The token never enters the dial, nor Exotel's call records.
import { exophone } from '../../shared/phones.ts';
import type { DialRequest } from '../carrier.ts';

/** Exotel's limit on TimeLimit (4 hours). */
export const MAX_TIME_LIMIT_S = 14_400;

/** The flow a route's calls run (its Voicebot applet streams to the gateway). */
export const flowUrl = (accountSid: string, appId: string): string =>
  `http://my.exotel.com/${encodeURIComponent(accountSid)}/exoml/start_voice/${encodeURIComponent(appId)}`;

/** The v1 `Calls/connect` form of a call through flow `appId`. */
export function classicConnectForm(route: { accountSid: string; appId: string; from: string }, req: DialRequest, callbackUrl: string): URLSearchParams {
  const form = new URLSearchParams({
    From: req.to,
    CallerId: exophone(req.from ?? route.from),
    Url: flowUrl(route.accountSid, route.appId),
    CallType: 'trans',
    TimeLimit: String(Math.min(MAX_TIME_LIMIT_S, Math.ceil(req.maxDurationMs / 1000))),
    // Exotel stops ringing at the gateway's ring timeout: a call the gateway gave up on rings no longer.
    TimeOut: String(Math.max(1, Math.ceil(req.ringTimeoutMs / 1000))),
    CustomField: req.callId,
    StatusCallback: callbackUrl,
    // A body we name rather than a default we cannot check (Exotel's v1 may post multipart by
    // default; the callback route reads forms, JSON and multipart alike).
    StatusCallbackContentType: 'application/json',
  });
  // Exotel's v1 reports only these two (the newer API adds `ringing`).
  for (const e of ['answered', 'terminal']) form.append('StatusCallbackEvents[]', e);
  return form;
}

/** Exotel's times, `YYYY-MM-DD HH:mm:ss` in the account's zone: epoch ms as if UTC (only differences are used). */
function clockOf(value: unknown): number | null {
  const m = typeof value === 'string' ? /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})/.exec(value) : null;
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  const at = Date.UTC(y!, mo! - 1, d!, h!, mi!, s!);
  // Exotel writes an unset end as the epoch in IST (1970-01-01 05:30:00).
  return at > 86_400_000 ? at : null;
}

const seconds = (value: unknown): number | null => {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,9}$/.test(value.trim()) ? Number(value) : Number.NaN;
  return Number.isInteger(n) && n >= 0 ? n : null;
};

/**
 * How long Exotel says a call lasted, whole seconds, from what it gives, the best first:
 * `ConversationDuration` (the answered time, in the callbacks and the details' `Details`), then
 * `Duration` (the details' and the v1 callbacks'), then `EndTime` − `StartTime` (StartTime is when the
 * call was put to the operator: ringing included, so the last resort). Null when none says.
 */
export function exotelSeconds(field: (name: string) => unknown): number | null {
  const talked = seconds(field('ConversationDuration'));
  if (talked !== null) return talked;
  const duration = seconds(field('Duration'));
  if (duration !== null) return duration;
  const start = clockOf(field('StartTime'));
  const end = clockOf(field('EndTime'));
  return start !== null && end !== null && end >= start ? Math.round((end - start) / 1000) : null;
}

/** The call object of an Exotel answer (`Call` on v1, `call` on the newer API). */
export function callOf(answer: Record<string, unknown>): Record<string, unknown> {
  const call = answer.Call ?? answer.call;
  return call !== null && typeof call === 'object' && !Array.isArray(call) ? (call as Record<string, unknown>) : {};
}

/** A field of Exotel's call details under either API's spelling (`Duration` and `duration`), or in its `Details`. */
export function detailsField(call: Record<string, unknown>): (name: string) => unknown {
  const details = call.Details ?? call.details;
  return (name) => {
    const lower = name.replace(/^./, (c) => c.toLowerCase());
    const snake = name.replace(/[A-Z]/g, (c, i: number) => `${i > 0 ? '_' : ''}${c.toLowerCase()}`);
    for (const key of [name, lower, snake]) if (call[key] !== undefined && call[key] !== null) return call[key];
    if (details !== null && typeof details === 'object') return (details as Record<string, unknown>)[name];
    return undefined;
  };
}
