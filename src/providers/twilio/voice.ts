// The `twilio` carrier: a call is placed with Twilio's REST API (`POST …/Calls.json`, form-encoded,
// Basic auth account SID : auth token) whose inline TwiML connects the answered call to the
// gateway's media stream (`<Connect><Stream url>` with the call id and its one-time token as
// `<Parameter>`s: Twilio's only per-call channel into the stream); its progress comes back as status
// callbacks (`parseStatusCallback`, signed: `verifySignature`); a hang-up is `POST …/Calls/{sid}.json
// Status=completed`; a cold transfer, the same call updated with `Twiml` `<Dial>` (src/voice/transfer.ts); what Twilio says the call lasted, `GET …/Calls/{sid}.json` (`duration`). The media
// itself is Twilio's Media Streams protocol (src/providers/carrier-wire/twilio.ts).
import { createHmac } from 'node:crypto';
import { endedNews, sameSecret, type Carrier, type DialRequest, type StatusNews } from '../carrier.ts';
import { twilioWire } from '../carrier-wire/twilio.ts';
import { carrierRest } from '../carrier-rest.ts';
import { callerIdE164 } from '../../shared/phones.ts';

export interface TwilioRoute {
  baseUrl: string;
  accountSid: string;
  /** The auth token (the route's api_key). */
  authToken: string;
  from: string;
}

/**
 * Twilio opens a `<Stream url>` over wss:// only: logged at start (src/server.ts) when a model routes
 * calls through Twilio and the gateway's public base URL (PUBLIC_BASE_URL, else the address it
 * listens on) is not https, since the stream URL its TwiML names is then ws://.
 */
export const TWILIO_WSS_WARNING =
  "Twilio opens media streams over wss:// only, but PUBLIC_BASE_URL is not https: the stream URL sent to Twilio is ws://, so calls through these models' twilio routes will have no audio; set PUBLIC_BASE_URL to the gateway's https address";

/** Whether a stream URL on this public base would be one Twilio opens. */
export const twilioCanStream = (publicBase: string): boolean => /^https:\/\//i.test(publicBase);

export const xml = (s: string): string => s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The TwiML that connects the answered call to the gateway's media stream (an inbound call's too: src/voice/inbound-twilio.ts). */
export function streamTwiml(req: Pick<DialRequest, 'streamUrl' | 'streamParameters'>): string {
  const params = Object.entries(req.streamParameters)
    .map(([name, value]) => `<Parameter name="${xml(name)}" value="${xml(value)}"/>`)
    .join('');
  return `<Response><Connect><Stream url="${xml(req.streamUrl)}">${params}</Stream></Connect></Response>`;
}

/** The TwiML a live call is updated with to hand it to `to` (a cold transfer): its `<Connect><Stream>` ends, the callee is dialled through. */
export function dialTwiml(to: string, callerId: string): string {
  return `<Response><Dial callerId="${xml(callerId)}"><Number>${xml(to)}</Number></Dial></Response>`;
}

/**
 * Twilio's request signature: base64(HMAC-SHA1(auth token, the full URL + each POST parameter's
 * name and value, sorted by name)).
 */
export function twilioSignature(authToken: string, url: string, params: readonly [string, string][]): string {
  const sorted = [...params].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHmac('sha1', authToken)
    .update(url + sorted.map(([k, v]) => k + v).join(''))
    .digest('base64');
}

/** Whether `signature` (X-Twilio-Signature) signs this callback; compared in constant time. */
export function verifySignature(authToken: string, url: string, params: readonly [string, string][], signature: string): boolean {
  return sameSecret(signature, twilioSignature(authToken, url, params));
}

/**
 * Twilio's AnsweredBy (its AsyncAmdStatusCallback): `human`; `machine_start`, `machine_end_beep`,
 * `machine_end_silence`, `machine_end_other` and `fax` are machines (with DetectMessageEnd, the
 * `machine_end_*` ones come once the greeting is over); `unknown`.
 */
const answeredBy = (value: string): 'human' | 'machine' | 'unknown' =>
  value === 'human' ? 'human' : value.startsWith('machine_') || value === 'fax' ? 'machine' : 'unknown';

/** What a status callback's CallStatus means for the call (out of order and repeated ones are the machine's to ignore); an AMD callback's AnsweredBy. */
function parseStatusCallback(params: ReadonlyMap<string, string>): StatusNews {
  const amd = params.get('AnsweredBy');
  if (amd !== undefined) {
    const ms = Number(params.get('MachineDetectionDuration') ?? '0');
    return { kind: 'answered_by', answeredBy: answeredBy(amd), detail: amd.slice(0, 40), decisionMs: Number.isFinite(ms) && ms >= 0 ? Math.round(ms) : 0 };
  }
  const status = params.get('CallStatus');
  if (status === 'ringing') return { kind: 'ringing' };
  if (status === 'in-progress') return { kind: 'answered' };
  // queued, initiated and canceled (ours) say nothing new.
  return endedNews(status, Number(params.get('CallDuration') ?? '0')) ?? { kind: 'ignored' };
}

export function twilioCarrier(route: TwilioRoute, opts: { callbackUrl(callId: string): string; timeoutMs?: number }): Carrier {
  const rest = carrierRest('twilio', route.baseUrl, { user: route.accountSid, password: route.authToken }, opts.timeoutMs);
  const account = `/2010-04-01/Accounts/${encodeURIComponent(route.accountSid)}`;
  const post = (path: string, form: URLSearchParams) => rest('POST', `${account}${path}`, form);
  return {
    wire: twilioWire,
    detectsMachines: true,
    async dial(req) {
      const form = new URLSearchParams({
        To: req.to,
        From: callerIdE164(req.from ?? route.from), // a call's from may be written 0… (an ExoPhone's form): Twilio takes E.164
        Twiml: streamTwiml(req),
        StatusCallback: opts.callbackUrl(req.callId),
        StatusCallbackMethod: 'POST',
        Timeout: String(Math.ceil(req.ringTimeoutMs / 1000)),
        TimeLimit: String(Math.ceil(req.maxDurationMs / 1000)),
      });
      for (const e of ['initiated', 'ringing', 'answered', 'completed']) form.append('StatusCallbackEvent', e);
      if (req.machineDetection) {
        // Twilio's asynchronous AMD: the call connects at once (the greeting plays) and the decision
        // comes by callback, signed as the status callbacks, to the same URL; DetectMessageEnd waits
        // for a machine's greeting to end (its beep), so a message left then is heard.
        form.set('MachineDetection', 'DetectMessageEnd');
        form.set('AsyncAmd', 'true');
        form.set('AsyncAmdStatusCallback', opts.callbackUrl(req.callId));
        form.set('AsyncAmdStatusCallbackMethod', 'POST');
      }
      const call = await post('/Calls.json', form);
      if (typeof call.sid !== 'string') throw new Error('twilio answered no call sid');
      return call.sid;
    },
    async hangup(sid) {
      await post(`/Calls/${encodeURIComponent(sid)}.json`, new URLSearchParams({ Status: 'completed' }));
    },
    async transfer(sid, to, from) {
      // Updating a live call with new TwiML ends its <Connect><Stream> (Twilio sends `stop`) and runs the <Dial>.
      await post(`/Calls/${encodeURIComponent(sid)}.json`, new URLSearchParams({ Twiml: dialTwiml(to, callerIdE164(from ?? route.from)) }));
    },
    async duration(sid) {
      // `duration` is a string of whole seconds once the call is over, null before.
      const call = await rest('GET', `${account}/Calls/${encodeURIComponent(sid)}.json`);
      const seconds = typeof call.duration === 'string' && /^\d{1,9}$/.test(call.duration) ? Number(call.duration) : null;
      return call.status === 'completed' ? seconds : null;
    },
    callbacks: {
      // Twilio posts forms, and signs their parameters; another body's fields are not what it signed.
      authentic: (req) =>
        (req.encoding ?? 'form') === 'form' &&
        route.authToken !== '' &&
        req.signature !== undefined &&
        verifySignature(route.authToken, req.url, req.params, req.signature),
      news: parseStatusCallback,
    },
  };
}
