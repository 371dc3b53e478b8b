// A fake Exotel for voice calls, speaking both of Exotel's call APIs as /work/shared/reference/voice.md
// records them (Basic api_key:api_token; every field checked as Exotel documents it):
//   the newer "connect to a bot" API:
//     POST /v1/accounts/{sid}/calls/connect (form) → 200 {call: {sid, status, from, direction: "outbound-api"}}
//     GET  /v1/accounts/{sid}/calls/{call_sid} → {call: {sid, status, duration, start_time, end_time}}
//   the long-standing v1 API, through a flow of the account's (test/fakes/exotel-classic.ts):
//     POST /v1/Accounts/{sid}/Calls/connect.json (form) → 200 {Call: {Sid, Status, …}}
//     GET  /v1/Accounts/{sid}/Calls/{CallSid}.json → {Call: {Sid, Status, Duration, StartTime, EndTime, …}}
// CallerId (callerid) must be one of the account's ExoPhones, written +91… or 0…. There is no
// hang-up: a call ends when the bot closes its stream (or the callee hangs up); a v1 call stops
// ringing at its TimeOut. The callee behind it is the simulator's (src/providers/simulator/voice.ts,
// scripted per number) on Exotel's Voicebot protocol (src/providers/carrier-wire/exotel.ts): on an
// answer it opens the call's stream (the `streamurl`, or what the flow's Voicebot applet names: an
// https:// applet URL is asked for it) at the rate its `?sample-rate=` asks (8 kHz default), in
// real time, sending the URL's query parameters as the start's custom_parameters, as Exotel does;
// it drops (and this fake records) media payloads that are not multiples of 320 bytes of at least
// 3,200. A stream whose handshake is refused is retried once, then the answered line stays up in
// dead air, billed, until its time limit: what Exotel does (the leg is `leg(callId)`).
// Status callbacks (unsigned: Exotel signs nothing) go to the call's StatusCallback, form-encoded
// unless StatusCallbackContentType asks for JSON or multipart, delivered at their worst: `answered`
// twice then a stale `ringing` (the newer API's; v1 has no ringing event); `terminal` twice, with
// ConversationDuration, StartTime and EndTime; and, for the numbers `badDays` names, dropped, late,
// repeated, reordered, JSON or multipart (test/fakes/bad-day.ts). Incoming calls (`incoming`) run
// the ExoPhone's flow: its Voicebot applet asked with Direction=incoming, the call's details inbound.
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import type { CalleeScript } from '../../src/config.ts';
import type { DialRequest } from '../../src/providers/carrier.ts';
import { simulatorCarrier } from '../../src/providers/simulator/voice.ts';
import type { SpeechClip } from '../../src/speech/clip.ts';
import { loadResamplers, type Resamplers } from '../../src/speech/resample.ts';
import { exotelCallee, exotelWire } from '../../src/providers/carrier-wire/exotel.ts';
import { appIdOf, classicRefusal, exophoneOf, exotelTime, voicebotStream, type Format } from './exotel-classic.ts';
import { type BadDay, CallbackDay, callbackBody } from './bad-day.ts';

export interface ExotelRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  form: URLSearchParams;
}

/** What the gateway sent a call's stream. */
export interface StreamRecord {
  media: number[];
  marks: number;
  clears: number;
}

export type { Format };

/** One call at Exotel: its leg, as Exotel bills it (from its answer to its end). */
interface Leg {
  api: 'connect' | 'v1';
  simId: string;
  callback: string | null;
  contentType: string | null;
  customField: string;
  /** The number dialled, the ExoPhone, and the v1 flow's app id. */
  to: string;
  callerId: string;
  appId: string | null;
  /** The connect API's stream URL. */
  streamUrl: string | null;
  /** A call to an ExoPhone (`incoming`): `to` is then the caller, `callerId` the ExoPhone. */
  inbound?: boolean;
  status: string;
  createdAt: number;
  answeredAt: number | null;
  endedAt: number | null;
}

const EVENTS = new Set(['answered', 'terminal', 'ringing']);
const RATES = new Set([8000, 16000, 24000]);

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => resolve(body));
  });

/** A stream URL's format: its `sample-rate` (8000 when absent or another), PCM16 as the Voicebot streams by default. */
const formatOf = (url: URL): Format => {
  const rate = Number(url.searchParams.get('sample-rate') ?? '8000');
  return { encoding: 'pcm16', rate: RATES.has(rate) ? (rate as Format['rate']) : 8000 };
};

/** Why Exotel would refuse this connect form (the newer API), or null. */
function refusal(form: URLSearchParams, exophones: string[]): string | null {
  const url = (() => {
    try {
      return new URL(form.get('streamurl') ?? '');
    } catch {
      return null;
    }
  })();
  if (!/^\+[1-9][0-9]{6,14}$/.test(form.get('from') ?? '')) return 'from must be an E.164 number';
  const callerId = exophoneOf(form.get('callerid'));
  if (!callerId || !exophones.some((e) => exophoneOf(e) === callerId)) return 'callerid must be one of the account’s ExoPhones';
  if (!url || !/^wss?:$/.test(url.protocol) || form.get('streamurl')!.length > 600) return 'streamurl must be a ws:// or wss:// URL of at most 600 characters';
  if ([...url.searchParams].length > 3 || url.search.length > 257) return 'streamurl carries at most 3 custom parameters of 256 characters';
  if (form.get('streamtype') !== 'bidirectional') return 'streamtype must be bidirectional';
  const limit = Number(form.get('timelimit'));
  if (!Number.isInteger(limit) || limit < 1 || limit > 14_400) return 'timelimit must be 1-14400 seconds';
  if ((form.get('customfield') ?? '').length > 128) return 'customfield is at most 128 characters';
  if (!/^https?:\/\//.test(form.get('statuscallback') ?? '')) return 'statuscallback must be a URL';
  const events = form.getAll('statuscallbackevents[]');
  if (events.length === 0 || !events.every((e) => EVENTS.has(e))) return 'statuscallbackevents[] are answered, terminal, ringing';
  return null;
}

export class FakeExotel {
  readonly requests: ExotelRequest[] = [];
  /** Each callback posted: `seconds`, a terminal one's ConversationDuration. */
  readonly callbacks: { sid: string; event: string; status: string; code: number; seconds?: number }[] = [];
  /** How each callee number's status callbacks are delivered (test/fakes/bad-day.ts); others as above. */
  readonly badDays = new Map<string, BadDay>();
  private readonly days = new Map<string, CallbackDay>();
  /** Every callback's parameters, by Exotel's call sid. */
  readonly callbackParams: { sid: string; params: [string, string][] }[] = [];
  /** What the gateway sent each call's stream, by the call's customfield (the gateway's call id). */
  readonly streams = new Map<string, StreamRecord>();
  /** The account's flows: app id → its Voicebot applet's URL (what the account set in Exotel's dashboard). */
  readonly flows = new Map<string, string>();
  /** Callee numbers whose stream starts this many ms after the answer (its `answered` callback). */
  readonly lateStreams = new Map<string, number>();
  private readonly calls = new Map<string, Leg>();
  private readonly bySimId = new Map<string, StreamRecord>();
  private readonly sidBySim = new Map<string, string>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly accountSid: string,
    private readonly credentials: string,
    private readonly exophones: string[],
    private readonly resamplers: Resamplers,
    private readonly carrier: ReturnType<typeof simulatorCarrier>,
  ) {}

  static async start(opts: {
    accountSid: string;
    apiKey: string;
    apiToken: string;
    callees: CalleeScript[];
    speak(text: string, voice: string): Promise<SpeechClip>;
    /** The account's ExoPhones (default 08047491899 and 08044556677). */
    exophones?: string[];
    /** The simulator's `onReply`: how long after a callee's speech the agent's audio came. */
    onReply?(callSid: string, delayMs: number): void;
  }): Promise<FakeExotel> {
    let self!: FakeExotel;
    const server = createServer((req, res) => void self.handle(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const resamplers = await loadResamplers();
    const carrier = simulatorCarrier({
      callees: opts.callees,
      logger: pino({ level: 'silent' }),
      speak: opts.speak,
      wire: exotelWire,
      refusedStream: 'dead_air',
      streamAt: (simId, req) => self.streamAt(simId, req),
      onReply: opts.onReply,
      onGatewayFrame: (simId, event, bytes) => {
        const record = self.bySimId.get(simId);
        if (event === 'media') record?.media.push(bytes);
        else if (event === 'mark' && record) record.marks += 1;
        else if (event === 'clear' && record) record.clears += 1;
      },
    });
    self = new FakeExotel(
      server,
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      opts.accountSid,
      `Basic ${Buffer.from(`${opts.apiKey}:${opts.apiToken}`).toString('base64')}`,
      opts.exophones ?? ['08047491899', '08044556677'],
      resamplers,
      carrier,
    );
    return self;
  }

  /** Where an answered call's stream goes, in the format its URL asks for. */
  private async streamAt(simId: string, req: DialRequest) {
    const sid = this.sidBySim.get(simId);
    const leg = sid ? this.calls.get(sid) : undefined;
    if (!leg || !sid) return null;
    await new Promise((r) => setTimeout(r, this.lateStreams.get(req.to) ?? 0)); // a loaded Exotel's stream starts late
    if (leg.api === 'connect') {
      const url = new URL(leg.streamUrl!);
      const format = formatOf(url);
      return { url: url.toString(), parameters: req.streamParameters, wire: exotelCallee(format, this.resamplers) };
    }
    const applet = this.flows.get(leg.appId!);
    // An incoming call's applet ask names the caller and the ExoPhone it landed on (Direction=incoming).
    const call = leg.inbound
      ? { sid, from: leg.to, to: leg.callerId, customField: '', direction: 'incoming' }
      : { sid, from: leg.to, to: leg.callerId, customField: leg.customField };
    const stream = applet ? await voicebotStream(applet, call, formatOf) : null;
    return stream && { url: stream.url, parameters: stream.parameters, wire: exotelCallee(stream.format, this.resamplers) };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = new URLSearchParams(await read(req));
    const path = req.url ?? '/';
    this.requests.push({ method: req.method ?? '', path, authorization: req.headers.authorization, form });
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const exception = (status: number, message: string) => json(status, { RestException: { Status: status, Message: message } });
    if (req.headers.authorization !== this.credentials) return exception(401, 'Authentication is required to view this page.');
    const base = `/v1/accounts/${this.accountSid}/calls`;
    const v1 = `/v1/Accounts/${this.accountSid}/Calls`;
    if (req.method === 'POST' && path === `${base}/connect`) {
      const refused = refusal(form, this.exophones);
      if (refused) return exception(400, refused);
      const sid = await this.place('connect', form.get('from')!, form.get('callerid')!, {
        streamUrl: form.get('streamurl')!,
        callback: form.get('statuscallback')!,
        customField: form.get('customfield') ?? '',
        timeLimitS: Number(form.get('timelimit')),
      });
      return json(200, { call: { sid, status: 'in-progress', from: form.get('from'), phonenumbersid: form.get('callerid'), direction: 'outbound-api' } });
    }
    if (req.method === 'POST' && (path === `${v1}/connect.json` || path === `${v1}/connect`)) {
      const refused = classicRefusal(form, { sid: this.accountSid, exophones: this.exophones, flows: new Set(this.flows.keys()) });
      if (refused) return exception(400, refused);
      const sid = await this.place('v1', form.get('From')!, form.get('CallerId')!, {
        appId: appIdOf(form.get('Url')!),
        callback: form.get('StatusCallback'),
        contentType: form.get('StatusCallbackContentType'),
        customField: form.get('CustomField') ?? '',
        timeLimitS: Number(form.get('TimeLimit') ?? '14400'),
        ringS: form.has('TimeOut') ? Number(form.get('TimeOut')) : null,
      });
      if (!path.endsWith('.json'))
        return void res.writeHead(200, { 'content-type': 'application/xml' }).end(`<TwilioResponse><Call><Sid>${sid}</Sid></Call></TwilioResponse>`);
      return json(200, { Call: this.v1Details(sid) });
    }
    const details = new RegExp(`^${base}/([0-9a-f]+)$`).exec(path);
    if (req.method === 'GET' && details) {
      const call = this.calls.get(details[1]!);
      if (!call || call.api !== 'connect') return exception(404, 'Call not found');
      const times = { start_time: exotelTime(call.createdAt), end_time: call.endedAt ? exotelTime(call.endedAt) : null };
      return json(200, { call: { sid: details[1], status: call.status, duration: this.duration(call), ...times } });
    }
    const v1Details = new RegExp(`^${v1}/([0-9a-f]+)\\.json$`).exec(path);
    if (req.method === 'GET' && v1Details) {
      const call = this.calls.get(v1Details[1]!);
      if (!call || call.api !== 'v1') return exception(404, 'Call not found');
      return json(200, { Call: this.v1Details(v1Details[1]!) });
    }
    exception(404, 'Not found');
  }

  /** A call Exotel took: its leg, dialled through the simulator's callee. */
  private async place(
    api: Leg['api'],
    to: string,
    callerId: string,
    o: {
      streamUrl?: string;
      appId?: string;
      callback: string | null;
      contentType?: string | null;
      customField: string;
      timeLimitS: number;
      ringS?: number | null;
      inbound?: boolean;
    },
  ): Promise<string> {
    const sid = Math.random().toString(16).slice(2).padEnd(32, '0');
    const leg: Leg = {
      api,
      simId: '',
      callback: o.callback,
      contentType: o.contentType ?? null,
      customField: o.customField,
      to,
      callerId,
      appId: o.appId ?? null,
      streamUrl: o.streamUrl ?? null,
      ...(o.inbound ? { inbound: true } : {}),
      status: 'queued',
      createdAt: Date.now(),
      answeredAt: null,
      endedAt: null,
    };
    this.calls.set(sid, leg);
    const day = new CallbackDay(this.badDays.get(to));
    this.days.set(sid, day);
    const record: StreamRecord = { media: [], marks: 0, clears: 0 };
    this.streams.set(leg.customField, record);
    const v1 = api === 'v1';
    const end = (status: string) => {
      if (leg.endedAt !== null) return;
      leg.status = status;
      leg.endedAt = Date.now();
      void day.ended(() => this.post(sid, 'terminal', leg.status));
    };
    leg.simId = await this.carrier.dial(
      {
        callId: leg.customField,
        to,
        from: callerId,
        streamUrl: o.streamUrl ?? '',
        streamParameters: o.streamUrl ? Object.fromEntries(new URL(o.streamUrl).searchParams) : {},
        ringTimeoutMs: 30_000,
        maxDurationMs: o.timeLimitS * 1000,
      },
      {
        ringing: () => {
          leg.status = 'ringing';
          if (!v1) void this.post(sid, 'ringing', 'ringing');
        },
        answered: () => {
          leg.status = 'in-progress';
          leg.answeredAt = Date.now();
          day.answered(
            () => this.post(sid, 'answered', 'in-progress'),
            () => (v1 ? Promise.resolve() : this.post(sid, 'ringing', 'ringing')),
          );
        },
        ended: ({ status }) => end(status === 'busy' ? 'busy' : status === 'no_answer' ? 'no-answer' : status === 'failed' ? 'failed' : 'completed'),
      },
    );
    this.sidBySim.set(leg.simId, sid);
    this.bySimId.set(leg.simId, record);
    // A v1 call rings at most its TimeOut; then Exotel gives up on it (no answer).
    if (o.ringS)
      setTimeout(() => {
        if (leg.answeredAt !== null || leg.endedAt !== null) return;
        void this.carrier.hangup(leg.simId);
        end('no-answer');
      }, o.ringS * 1000).unref();
    return sid;
  }

  private v1Details(sid: string): Record<string, unknown> {
    const call = this.calls.get(sid)!;
    return {
      Sid: sid,
      AccountSid: this.accountSid,
      // A call to a flow: From the number dialled, To the ExoPhone it came from.
      From: call.to,
      To: call.callerId,
      PhoneNumberSid: call.callerId,
      Status: call.status,
      StartTime: exotelTime(call.createdAt),
      EndTime: call.endedAt ? exotelTime(call.endedAt) : null,
      // Exotel fills Duration in once the call is over.
      Duration: call.endedAt ? String(this.duration(call)) : null,
      Direction: call.inbound ? 'inbound' : 'outbound-api',
      CustomField: call.customField,
    };
  }

  /**
   * A call from `caller` to the ExoPhone `exophone`, whose flow `appId` the account connected to it:
   * the caller (the simulator's script whose `to` is `caller`) is on the line at once, and the flow's
   * Voicebot applet is asked for its stream with `Direction=incoming` and no CustomField, as Exotel
   * does. Resolves with Exotel's sid of the call.
   */
  incoming(caller: string, exophone: string, appId: string): Promise<string> {
    return this.place('v1', caller, exophone, { appId, callback: null, customField: '', timeLimitS: 14_400, inbound: true });
  }

  /**
   * What a flow's Connect applet with a dynamic URL does once the Voicebot applet's stream ended (the
   * call still up): GET the URL with the call's details (Exotel's Programmable Connect, version 1.0),
   * read whom to dial from `destination.numbers`.
   */
  async askConnectApplet(url: string, callId: string): Promise<{ status: number; body: unknown }> {
    const sid = this.sidOf(callId) ?? 'unknown-sid';
    const leg = this.calls.get(sid);
    const query = new URLSearchParams({
      CallSid: sid,
      CallFrom: leg?.to ?? '',
      CallTo: leg?.callerId ?? '',
      Direction: 'outbound-dial',
      CallStatus: 'in-progress',
    });
    const res = await fetch(`${url}?${query}`, { headers: { 'Exotel-Version': '1.0' } });
    return { status: res.status, body: await res.json() };
  }

  /** Exotel's sid of the call the gateway placed as `callId` (its customfield). */
  sidOf(callId: string): string | undefined {
    return [...this.calls].find(([, c]) => c.customField === callId)?.[0];
  }

  /** The call's leg at Exotel: its status and the seconds it billed (answer → end, or now while up). */
  leg(callId: string): { status: string; billedSeconds: number; answered: boolean } | undefined {
    const call = this.calls.get(this.sidOf(callId) ?? '');
    if (!call) return undefined;
    const seconds = call.answeredAt ? ((call.endedAt ?? Date.now()) - call.answeredAt) / 1000 : 0;
    return { status: call.status, billedSeconds: seconds, answered: call.answeredAt !== null };
  }

  /** Whether the call details of the gateway's `callId` were asked for. */
  detailsAsked(callId: string): boolean {
    const sid = this.sidOf(callId);
    return (
      sid !== undefined &&
      this.requests.some(
        (r) =>
          r.method === 'GET' && (r.path === `/v1/accounts/${this.accountSid}/calls/${sid}` || r.path === `/v1/Accounts/${this.accountSid}/Calls/${sid}.json`),
      )
    );
  }

  private duration(call: { answeredAt: number | null; endedAt: number | null }): number {
    return call.answeredAt ? Math.round(((call.endedAt ?? Date.now()) - call.answeredAt) / 1000) : 0;
  }

  /** An (unsigned) status callback to the URL the call gave, in the content type it asked for (form-encoded by default) or the callee's bad day has. */
  async post(sid: string, event: string, status: string): Promise<number> {
    const call = this.calls.get(sid);
    if (!call?.callback) return 0;
    const params: [string, string][] = [
      ['CallSid', sid],
      ['EventType', event],
      ['Status', status],
      ['DateUpdated', exotelTime(Date.now())],
      ['CustomField', call.customField],
    ];
    const seconds = event === 'terminal' ? this.duration(call) : undefined;
    if (seconds !== undefined) {
      params.push(['ConversationDuration', String(seconds)], ['StartTime', exotelTime(call.createdAt)]);
      params.push(['EndTime', exotelTime(call.endedAt ?? Date.now())]);
    }
    this.callbackParams.push({ sid, params });
    const asked = call.contentType === 'application/json' ? 'json' : call.contentType === 'multipart/form-data' ? 'multipart' : undefined;
    // Exotel's JSON carries the call's legs as a nested list (the gateway does not read it).
    const { body, headers } = callbackBody(params, this.days.get(sid)?.day.encoding ?? asked, { Legs: [{ OnCallDuration: seconds ?? 0, Status: status }] });
    const res = await fetch(call.callback, { method: 'POST', headers, body }).catch(() => null);
    this.callbacks.push({ sid, event, status, code: res?.status ?? 0, ...(seconds !== undefined ? { seconds } : {}) });
    await res?.text();
    return res?.status ?? 0;
  }

  async close(): Promise<void> {
    for (const day of this.days.values()) day.close();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
