// A fake Exotel for voice calls, speaking the wire format of /work/shared/reference/voice.md:
//   POST /v1/accounts/{sid}/calls/connect (form, Basic api_key:api_token; every field checked as
//        Exotel documents it) → 200 {call: {sid, status, from, direction: "outbound-api"}}
//   GET  /v1/accounts/{sid}/calls/{call_sid} → {call: {sid, status, duration}}
// There is no hang-up: a call ends when the bot closes its stream (or the callee hangs up). The
// callee behind it is the simulator's (src/providers/simulator/voice.ts, scripted per number) run
// on Exotel's Voicebot protocol (src/providers/carrier-wire/exotel.ts): on an answer it opens the `streamurl`
// and sends its query parameters as the start's custom_parameters, as Exotel does; it drops (and
// this fake records) media payloads that are not multiples of 320 bytes of at least 3,200.
// Status callbacks are form posts to `statuscallback` (unsigned: Exotel signs nothing), delivered
// at their worst: `answered` twice then a stale `ringing`; `terminal` twice.
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import type { CalleeScript } from '../../src/config.ts';
import { simulatorCarrier } from '../../src/providers/simulator/voice.ts';
import type { SpeechClip } from '../../src/speech/clip.ts';
import { exotelWire } from '../../src/providers/carrier-wire/exotel.ts';

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

const EVENTS = new Set(['answered', 'terminal', 'ringing']);

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => resolve(body));
  });

/** Why Exotel would refuse this connect form, or null. */
function refusal(form: URLSearchParams): string | null {
  const url = (() => {
    try {
      return new URL(form.get('streamurl') ?? '');
    } catch {
      return null;
    }
  })();
  if (!/^\+[1-9][0-9]{6,14}$/.test(form.get('from') ?? '')) return 'from must be an E.164 number';
  if (!form.get('callerid')) return 'callerid is required';
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
  readonly callbacks: { event: string; status: string; code: number }[] = [];
  /** What the gateway sent each call's stream, by the call's customfield (the gateway's call id). */
  readonly streams = new Map<string, StreamRecord>();
  private readonly calls = new Map<
    string,
    { simId: string; callback: string; customField: string; status: string; answeredAt: number | null; endedAt: number | null }
  >();
  private readonly bySimId = new Map<string, StreamRecord>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly accountSid: string,
    private readonly credentials: string,
    private readonly carrier: ReturnType<typeof simulatorCarrier>,
  ) {}

  static async start(opts: {
    accountSid: string;
    apiKey: string;
    apiToken: string;
    callees: CalleeScript[];
    speak(text: string, voice: string): Promise<SpeechClip>;
    /** The simulator's `onReply`: how long after a callee's speech the agent's audio came. */
    onReply?(callSid: string, delayMs: number): void;
  }): Promise<FakeExotel> {
    let self!: FakeExotel;
    const carrier = simulatorCarrier({
      callees: opts.callees,
      logger: pino({ level: 'silent' }),
      speak: opts.speak,
      wire: exotelWire,
      onReply: opts.onReply,
      onGatewayFrame: (simId, event, bytes) => {
        const record = self.bySimId.get(simId);
        if (event === 'media') record?.media.push(bytes);
        else if (event === 'mark' && record) record.marks += 1;
        else if (event === 'clear' && record) record.clears += 1;
      },
    });
    const server = createServer((req, res) => void self.handle(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    self = new FakeExotel(
      server,
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      opts.accountSid,
      `Basic ${Buffer.from(`${opts.apiKey}:${opts.apiToken}`).toString('base64')}`,
      carrier,
    );
    return self;
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
    if (req.method === 'POST' && path === `${base}/connect`) {
      const refused = refusal(form);
      if (refused) return exception(400, refused);
      const streamUrl = new URL(form.get('streamurl')!);
      const sid = Math.random().toString(16).slice(2).padEnd(32, '0');
      const call = {
        simId: '',
        callback: form.get('statuscallback')!,
        customField: form.get('customfield') ?? '',
        status: 'queued',
        answeredAt: null as number | null,
        endedAt: null as number | null,
      };
      this.calls.set(sid, call);
      const record: StreamRecord = { media: [], marks: 0, clears: 0 };
      this.streams.set(call.customField, record);
      call.simId = await this.carrier.dial(
        {
          callId: call.customField,
          to: form.get('from')!,
          from: form.get('callerid'),
          streamUrl: streamUrl.toString(),
          streamParameters: Object.fromEntries(streamUrl.searchParams),
          ringTimeoutMs: 30_000,
          maxDurationMs: Number(form.get('timelimit')) * 1000,
        },
        {
          ringing: () => {
            call.status = 'ringing';
            void this.post(sid, 'ringing', 'ringing');
          },
          answered: () => {
            call.status = 'in-progress';
            call.answeredAt = Date.now();
            void this.post(sid, 'answered', 'in-progress')
              .then(() => this.post(sid, 'answered', 'in-progress'))
              .then(() => this.post(sid, 'ringing', 'ringing'));
          },
          ended: ({ status }) => {
            call.status = status === 'busy' ? 'busy' : status === 'no_answer' ? 'no-answer' : status === 'failed' ? 'failed' : 'completed';
            call.endedAt = Date.now();
            void this.post(sid, 'terminal', call.status).then(() => this.post(sid, 'terminal', call.status));
          },
        },
      );
      this.bySimId.set(call.simId, record);
      return json(200, { call: { sid, status: 'in-progress', from: form.get('from'), phonenumbersid: form.get('callerid'), direction: 'outbound-api' } });
    }
    const details = new RegExp(`^${base}/([0-9a-f]+)$`).exec(path);
    if (req.method === 'GET' && details) {
      const call = this.calls.get(details[1]!);
      if (!call) return exception(404, 'Call not found');
      return json(200, { call: { sid: details[1], status: call.status, duration: this.duration(call) } });
    }
    exception(404, 'Not found');
  }

  /** Exotel's sid of the call the gateway placed as `callId` (its customfield). */
  sidOf(callId: string): string | undefined {
    return [...this.calls].find(([, c]) => c.customField === callId)?.[0];
  }

  /** Whether the call details of the gateway's `callId` were asked for. */
  detailsAsked(callId: string): boolean {
    const sid = this.sidOf(callId);
    return sid !== undefined && this.requests.some((r) => r.method === 'GET' && r.path === `/v1/accounts/${this.accountSid}/calls/${sid}`);
  }

  private duration(call: { answeredAt: number | null; endedAt: number | null }): number {
    return call.answeredAt ? Math.round(((call.endedAt ?? Date.now()) - call.answeredAt) / 1000) : 0;
  }

  /** An (unsigned) status callback, form-encoded, to the URL the call gave. */
  async post(sid: string, event: string, status: string): Promise<number> {
    const call = this.calls.get(sid);
    if (!call) return 0;
    const params: [string, string][] = [
      ['CallSid', sid],
      ['EventType', event],
      ['Status', status],
      ['DateUpdated', new Date().toISOString().slice(0, 19).replace('T', ' ')],
      ['CustomField', call.customField],
    ];
    if (event === 'terminal') params.push(['ConversationDuration', String(this.duration(call))]);
    const res = await fetch(call.callback, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params).toString(),
    }).catch(() => null);
    this.callbacks.push({ event, status, code: res?.status ?? 0 });
    await res?.text();
    return res?.status ?? 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
