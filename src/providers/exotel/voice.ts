// The `exotel` carrier (India): a call is placed with Exotel's "connect to a bot" API (`POST
// /v1/accounts/{sid}/calls/connect`, form-encoded, Basic auth API key : API token), which dials the
// number and, once answered, opens a bidirectional Voicebot stream to the gateway's stream URL
// (src/providers/carrier-wire/exotel.ts: PCM16 8 kHz, snake_case frames). Decisions, from what Exotel documents:
// - The call id and its one-time stream token ride on the stream URL's query string: Exotel hands
//   a stream URL's query parameters to the bot as the `start` frame's `custom_parameters` (its only
//   per-call channel into the stream, as Twilio's <Parameter>s are), where the gateway checks the
//   token. `customfield` carries the call id alone, to find the call in Exotel's records: it never
//   reaches the stream, so the token would only spread into Exotel's call logs there.
// - Status callbacks are not signed by Exotel: the callback URL carries a per-call secret (`token`,
//   an HMAC of the call id under the gateway's key secret), compared in constant time.
// - Exotel documents no API to hang up or cancel such a call. The gateway ends it by closing its
//   stream (the media loop does, before it asks the carrier to hang up), which ends the call at
//   Exotel; `timelimit` (the call's maximum) ends one whose stream is gone. `hangup` reads the
//   call's details (`GET …/calls/{sid}`) and logs one still up; `duration` reads its duration there
//   once it is `completed` (a call finalized after a restart). A call cancelled before its answer
//   rings on: when it is answered, its stream is refused (the call is no longer live here) and
//   Exotel ends it, billing nothing here.
import type { Logger } from 'pino';
import { endedNews, sameSecret, type Carrier, type StatusNews } from '../carrier.ts';
import { exotelWire } from '../carrier-wire/exotel.ts';
import { carrierRest } from '../carrier-rest.ts';

export interface ExotelRoute {
  baseUrl: string;
  accountSid: string;
  /** The API key (the route's api_key) and the API token (its api_token): Basic auth's user and password. */
  apiKey: string;
  apiToken: string;
  /** The ExoPhone calls come from (callerid), unless a call names another the route owns. */
  from: string;
}

/** Exotel's limit on `timelimit` (4 hours). */
const MAX_TIME_LIMIT_S = 14_400;
/** Call statuses Exotel reports for a call that is not over. */
const LIVE = new Set(['queued', 'ringing', 'in-progress']);

/**
 * What a status callback means for the call: `EventType` `ringing` and `answered` say so; a
 * `terminal` one (or one without EventType: Exotel's default callback) says how it ended by
 * `Status` (`completed`, `busy`, `no-answer`, `failed`), with `ConversationDuration` when given.
 */
function parseExotelCallback(params: ReadonlyMap<string, string>): StatusNews {
  const event = (params.get('EventType') ?? 'terminal').toLowerCase();
  if (event === 'ringing') return { kind: 'ringing' };
  if (event === 'answered') return { kind: 'answered' };
  if (event !== 'terminal') return { kind: 'ignored' };
  return endedNews(params.get('Status'), Number(params.get('ConversationDuration') ?? '0')) ?? { kind: 'ignored' };
}

export interface ExotelOptions {
  /** The status callback URL of a call, with its secret (`?token=`). */
  callbackUrl(callId: string): string;
  /** The call's callback secret (what `?token=` must be). */
  callbackToken(callId: string): string;
  logger: Logger;
  timeoutMs?: number;
}

export function exotelCarrier(route: ExotelRoute, opts: ExotelOptions): Carrier {
  const rest = carrierRest('exotel', route.baseUrl, { user: route.apiKey, password: route.apiToken }, opts.timeoutMs);
  const calls = `/v1/accounts/${encodeURIComponent(route.accountSid)}/calls`;
  /**
   * The call's details (`GET …/calls/{sid}`): its status and its duration, whole seconds (a number or
   * a string of digits; null while Exotel has not filled it in, which it does after the call, at
   * times minutes later).
   */
  const details = async (sid: string): Promise<{ status: string; duration: number | null }> => {
    const answer = await rest('GET', `${calls}/${encodeURIComponent(sid)}`);
    const call = (answer.call ?? answer.Call ?? {}) as Record<string, unknown>;
    const status = call.status ?? call.Status;
    const duration = call.duration ?? call.Duration;
    const seconds = typeof duration === 'number' ? duration : typeof duration === 'string' && /^\d{1,9}$/.test(duration) ? Number(duration) : null;
    return {
      status: typeof status === 'string' ? status : 'unknown',
      duration: seconds !== null && Number.isInteger(seconds) && seconds >= 0 ? seconds : null,
    };
  };
  return {
    wire: exotelWire,
    async dial(req) {
      const streamUrl = new URL(req.streamUrl);
      for (const [name, value] of Object.entries(req.streamParameters)) streamUrl.searchParams.set(name, value);
      const form = new URLSearchParams({
        from: req.to,
        callerid: req.from ?? route.from,
        streamurl: streamUrl.toString(),
        streamtype: 'bidirectional',
        timelimit: String(Math.min(MAX_TIME_LIMIT_S, Math.ceil(req.maxDurationMs / 1000))),
        customfield: req.callId,
        statuscallback: opts.callbackUrl(req.callId),
      });
      for (const e of ['ringing', 'answered', 'terminal']) form.append('statuscallbackevents[]', e);
      const answer = await rest('POST', `${calls}/connect`, form);
      const sid = (answer.call as { sid?: unknown } | undefined)?.sid;
      if (typeof sid !== 'string' || sid === '') throw new Error('exotel answered no call sid');
      return sid;
    },
    async hangup(sid) {
      // No hang-up API: the stream's close ends the call (above). What Exotel says of it:
      const call = await details(sid);
      if (LIVE.has(call.status))
        opts.logger.info(
          { call_sid: sid, status: call.status },
          'exotel call still up: it ends with its stream, or at its timelimit (Exotel has no hang-up API)',
        );
      else opts.logger.debug({ call_sid: sid, status: call.status, duration: call.duration }, 'exotel call over');
    },
    async duration(sid) {
      const call = await details(sid);
      return call.status === 'completed' ? call.duration : null;
    },
    callbacks: {
      authentic: (req) => req.token !== undefined && sameSecret(req.token, opts.callbackToken(req.callId)),
      news: parseExotelCallback,
    },
  };
}
