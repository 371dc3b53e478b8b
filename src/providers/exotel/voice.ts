// The `exotel` carrier (India), on either of Exotel's call APIs (Basic auth API key : API token):
// - a route with `app_id` places its calls through the long-standing v1 API most accounts use
//   (`POST /v1/Accounts/{sid}/Calls/connect.json` with the flow `app_id`, whose Voicebot applet opens
//   the stream: src/providers/exotel/classic.ts, with how the call's id and token reach the stream);
// - a route without places them with the newer "connect to a bot" API (`POST
//   /v1/accounts/{sid}/calls/connect`, form-encoded), which dials the number and, once answered,
//   opens a bidirectional Voicebot stream to the `streamurl` it was given.
// Either way the stream is Exotel's Voicebot protocol (src/providers/carrier-wire/exotel.ts: PCM16 at
// 8 kHz by default, 16/24 kHz or μ-law as its start says; snake_case frames). Decisions, from what Exotel documents:
// - The call id and its one-time stream token ride on the stream URL's query string: Exotel hands
//   a stream URL's query parameters to the bot as the `start` frame's `custom_parameters` (its only
//   per-call channel into the stream, as Twilio's <Parameter>s are), where the gateway checks the
//   token. `customfield` carries the call id alone, to find the call in Exotel's records (and, on
//   the v1 API, the call at the applet's URL): it never carries the token, which would only spread
//   into Exotel's call logs there.
// - Status callbacks are not signed by Exotel: the callback URL carries a per-call secret (`token`,
//   an HMAC of the call id under the gateway's key secret), compared in constant time.
// - Ending the carrier's leg: neither API has a hang-up (Exotel's hang-up action belongs to its
//   separate CPaaS "legs" API, whose legs these calls are not). What ends a Voicebot call is the bot
//   closing its stream (the flow then moves on, to its end): the media loop does so when it hangs
//   up, and a stream that reaches the gateway for a call no longer live here (cancelled or timed
//   out while it rang, then answered) is accepted and closed at once (src/ws/voice.ts) rather than
//   refused, which Exotel retries and then leaves in dead air it bills until `timelimit`. The v1
//   API also takes the ring timeout (`TimeOut`), so a call the gateway gave up on stops ringing.
//   `hangup` reads the call's details and logs one still up; `duration` reads there how long it
//   lasted once it is `completed` (a call finalized after a restart).
import type { Logger } from 'pino';
import { endedNews, sameSecret, type Carrier, type StatusNews } from '../carrier.ts';
import { exotelWire } from '../carrier-wire/exotel.ts';
import { carrierRest } from '../carrier-rest.ts';
import { exophone } from '../../shared/phones.ts';
import { callOf, classicConnectForm, detailsField, exotelSeconds, MAX_TIME_LIMIT_S } from './classic.ts';

export interface ExotelRoute {
  baseUrl: string;
  accountSid: string;
  /** The API key (the route's api_key) and the API token (its api_token): Basic auth's user and password. */
  apiKey: string;
  apiToken: string;
  /** The ExoPhone calls come from (callerid), unless a call names another the route owns (E.164 or 0XXXXXXXXXX). */
  from: string;
  /** The flow (app id) of the account's whose Voicebot applet streams to the gateway: the v1 API's calls. */
  appId?: string;
}
/** Call statuses Exotel reports for a call that is not over. */
const LIVE = new Set(['queued', 'ringing', 'in-progress']);

/**
 * What a status callback means for the call: `EventType` `ringing` and `answered` say so; a
 * `terminal` one (or one without EventType: Exotel's default callback) says how it ended by
 * `Status` (`completed`, `busy`, `no-answer`, `failed`), with how long it lasted when it says
 * (`ConversationDuration`, else `Duration`, else `EndTime` − `StartTime`: `exotelSeconds`).
 */
function parseExotelCallback(params: ReadonlyMap<string, string>): StatusNews {
  const event = (params.get('EventType') ?? 'terminal').toLowerCase();
  if (event === 'ringing') return { kind: 'ringing' };
  if (event === 'answered') return { kind: 'answered' };
  if (event !== 'terminal') return { kind: 'ignored' };
  return endedNews(params.get('Status'), exotelSeconds((name) => params.get(name)) ?? 0) ?? { kind: 'ignored' };
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
  const account = encodeURIComponent(route.accountSid);
  // The v1 API's paths are capitalised and take `.json`; the newer API's are lowercase.
  const calls = route.appId ? `/v1/Accounts/${account}/Calls` : `/v1/accounts/${account}/calls`;
  const callPath = (callSid: string) => `${calls}/${encodeURIComponent(callSid)}${route.appId ? '.json' : ''}`;
  /**
   * The call's details (`GET …/calls/{sid}`, v1 `…/Calls/{sid}.json`): its status and how long it
   * lasted, whole seconds (`exotelSeconds`: null while Exotel has not filled it in, which it does
   * after the call, at times minutes later).
   */
  const details = async (callSid: string): Promise<{ status: string; duration: number | null }> => {
    const field = detailsField(callOf(await rest('GET', callPath(callSid))));
    const status = field('Status');
    return { status: typeof status === 'string' ? status : 'unknown', duration: exotelSeconds(field) };
  };
  return {
    wire: exotelWire,
    async dial(req) {
      if (route.appId) {
        const form = classicConnectForm({ accountSid: route.accountSid, appId: route.appId, from: route.from }, req, opts.callbackUrl(req.callId));
        const sid = callOf(await rest('POST', `${calls}/connect.json`, form)).Sid;
        if (typeof sid !== 'string' || sid === '') throw new Error('exotel answered no call Sid');
        return sid;
      }
      const streamUrl = new URL(req.streamUrl);
      for (const [name, value] of Object.entries(req.streamParameters)) streamUrl.searchParams.set(name, value);
      const form = new URLSearchParams({
        from: req.to,
        callerid: exophone(req.from ?? route.from),
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
    async hangup(callSid) {
      // No hang-up API: the stream's close ends the call (above). What Exotel says of it:
      const call = await details(callSid);
      if (LIVE.has(call.status))
        opts.logger.info(
          { call_sid: callSid, status: call.status },
          'exotel call still up: it ends when its stream is closed, or at its timelimit (Exotel has no hang-up API)',
        );
      else opts.logger.debug({ call_sid: callSid, status: call.status, duration: call.duration }, 'exotel call over');
    },
    // A transfer through a flow: Exotel's APIs cannot redirect a live call, but the flow moves on when
    // the Voicebot applet's stream ends (the gateway closes it as the call ends `transferred`), and
    // the flow's next applet, Connect, dials (docs/api/voice.md, Transfers). Without a flow the
    // stream's end ends the call: no transfer.
    ...(route.appId ? { transfer: async () => undefined, asksAfterTransfer: true } : {}),
    async duration(callSid) {
      const call = await details(callSid);
      return call.status === 'completed' ? call.duration : null;
    },
    callbacks: {
      authentic: (req) => req.token !== undefined && sameSecret(req.token, opts.callbackToken(req.callId)),
      news: parseExotelCallback,
    },
  };
}
