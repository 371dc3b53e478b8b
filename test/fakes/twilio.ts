// A fake Twilio for voice calls, speaking the wire format of /work/shared/reference/voice.md:
//   POST /2010-04-01/Accounts/{sid}/Calls.json (form, Basic sid:token) → 201 {sid: "CA…", status: "queued"}
//   POST /2010-04-01/Accounts/{sid}/Calls/{CallSid}.json Status=completed|canceled → 200 (hangs up)
//   POST /2010-04-01/Accounts/{sid}/Calls/{CallSid}.json Twiml=<Response><Dial>… → 200 (a live call
//        updated: its stream gets `stop` and closes, the callee is put through to the <Dial>'s number,
//        whose simulated callee says what that party does: `transfers`); a call not in progress → 400 21220
//   GET  /2010-04-01/Accounts/{sid}/Calls/{CallSid}.json → {sid, status, duration}: `duration` whole
//        seconds answer → end as a string once the call is over, null before (as Twilio's)
// The callee behind it is the simulator's (src/providers/simulator/voice.ts, scripted per number):
// on an answer it opens the media stream the TwiML's <Stream url> names, with its <Parameter>s as
// customParameters, and speaks Media Streams. Status callbacks are form posts to StatusCallback,
// signed X-Twilio-Signature with the auth token, and delivered as Twilio does at its worst:
// `in-progress` twice and then a stale `ringing`; `completed` twice; and, for the numbers `badDays`
// names, dropped, late, repeated or reordered (test/fakes/bad-day.ts; Twilio posts forms only).
// And incoming calls (`incoming`): the number's signed webhook POSTed, its TwiML followed.
// A dial with MachineDetection and AsyncAmd=true gets Twilio's asynchronous AMD callback: a form post
// to AsyncAmdStatusCallback with CallSid, AccountSid, AnsweredBy and MachineDetectionDuration (ms),
// signed as the status callbacks. What Twilio's AMD would hear is the callee's script: a callee with a
// `beep_ms` step is `machine_end_beep` once its beep has been sent (DetectMessageEnd: the greeting's
// end); one whose first `say` lasts 2.4 s or more (Twilio's MachineDetectionSpeechThreshold) is a
// greeting without a beep, `machine_end_silence` 1.2 s after it ends (MachineDetectionSpeechEndThreshold);
// any other `human` 500 ms after its first `say` ends. `amdDays` per callee number delivers it
// late (`delayMs`), more than once (`repeat`), never (`drop`) or wrong (`answeredBy`: Twilio errs too).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import type { CalleeScript } from '../../src/config.ts';
import { simulatorCarrier } from '../../src/providers/simulator/voice.ts';
import { SpeechClip } from '../../src/speech/clip.ts';
import { twilioSignature } from '../../src/providers/twilio/voice.ts';
import { type BadDay, CallbackDay } from './bad-day.ts';

export interface TwilioRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  form: URLSearchParams;
}

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => resolve(body));
  });

const unxml = (s: string) => s.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n))).replace(/&amp;/g, '&');

/** The callee script for a number, as the simulator picks it. */
const calleeOf = (callees: CalleeScript[], to: string): CalleeScript =>
  callees.find((c) => c.to === to) ?? callees.find((c) => c.to === '*') ?? { to: '*', answer: 'answer', steps: [] };

export class FakeTwilio {
  readonly requests: TwilioRequest[] = [];
  /** Each callback posted: `seconds`, a `completed` one's CallDuration. */
  readonly callbacks: { sid: string; status: string; code: number; seconds?: number }[] = [];
  /** How each callee number's status callbacks are delivered (test/fakes/bad-day.ts); others as above. */
  readonly badDays = new Map<string, BadDay>();
  private readonly days = new Map<string, CallbackDay>();
  /**
   * The line as the callee's side saw it, by the gateway's call id (epoch ms): when each of the
   * callee's `say` steps ended (its last frame sent) and when each agent `media` frame arrived.
   */
  readonly lines = new Map<string, { said: number[]; media: number[] }>();
  private readonly callIdOf = new Map<string, string>();
  /** Each live call updated with a <Dial> (a transfer): its TwiML, the number, and whether that party answered (once its part is over). */
  readonly transfers: { sid: string; callId: string; twiml: string; to: string; at: number; answered?: boolean }[] = [];
  /** Told when a live call is updated with a <Dial>, before it is answered (a test kills the gateway there). */
  onTransfer: ((sid: string) => void) | null = null;
  /** The agent's audio each call's callee received (μ-law), by the gateway's call id: what a DTMF detector listens to. */
  readonly heard = new Map<string, Buffer[]>();
  /** How each callee number's AMD callback is delivered: late, repeated, or lost. */
  readonly amdDays = new Map<string, { delayMs?: number; repeat?: number; drop?: boolean; answeredBy?: string }>();
  /** How long each text the callees said lasted (ms), as rendered: what Twilio's AMD measures a greeting by. */
  private readonly saidMs = new Map<string, number>();
  /** Each AMD callback posted. */
  readonly amdCallbacks: { sid: string; answeredBy: string; code: number }[] = [];
  private readonly amd = new Map<string, { url: string; to: string; said: number; beepAfter: number | null; first: string | null }>();
  private readonly sidOfSim = new Map<string, string>();
  private seq = 0;
  private readonly calls = new Map<string, { simId: string; callback: string; answeredAt: number | null; endedAt: number | null }>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly accountSid: string,
    readonly authToken: string,
    private readonly carrier: ReturnType<typeof simulatorCarrier>,
    private readonly callees: CalleeScript[] = [],
  ) {}

  /** `speak`: the callees' speech for a `say` (default half a second of silence). */
  static async start(opts: {
    accountSid: string;
    authToken: string;
    callees: CalleeScript[];
    speak?(text: string, voice: string): Promise<SpeechClip>;
    /** The simulator's `onReply`: how long after a callee's speech the agent's audio came. */
    onReply?(callSid: string, delayMs: number): void;
  }): Promise<FakeTwilio> {
    let self!: FakeTwilio;
    const render = opts.speak ?? (async () => new SpeechClip(Buffer.alloc(8000)));
    const speak = async (text: string, voice: string) => {
      const clip = await render(text, voice);
      self.saidMs.set(text, clip.pcm16.length / 16); // 8 kHz PCM16: 16 bytes a ms
      return clip;
    };
    const line = (simId: string) => {
      const id = self.callIdOf.get(simId) ?? simId;
      let l = self.lines.get(id);
      if (!l) self.lines.set(id, (l = { said: [], media: [] }));
      return l;
    };
    const carrier = simulatorCarrier({
      callees: opts.callees,
      logger: pino({ level: 'silent' }),
      speak,
      onReply: opts.onReply,
      onSaid: (simId, at) => {
        line(simId).said.push(at);
        self.heardByAmd(simId);
      },
      onGatewayFrame: (simId, event, _bytes, payload) => {
        if (event !== 'media') return;
        line(simId).media.push(Date.now());
        const id = self.callIdOf.get(simId) ?? simId;
        if (payload) self.heard.set(id, [...(self.heard.get(id) ?? []), payload]);
      },
      onTransferred: (simId, _to, answered) => {
        for (const t of self.transfers) if (t.callId === self.callIdOf.get(simId)) t.answered = answered;
      },
    });
    const server = createServer((req, res) => void self.handle(req, res.writeHead.bind(res), res.end.bind(res)));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    self = new FakeTwilio(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, opts.accountSid, opts.authToken, carrier, opts.callees);
    return self;
  }

  private async handle(req: IncomingMessage, head: (s: number, h: Record<string, string>) => void, end: (b: string) => void): Promise<void> {
    const form = new URLSearchParams(await read(req));
    const path = req.url ?? '/';
    this.requests.push({ method: req.method ?? '', path, authorization: req.headers.authorization, form });
    const json = (status: number, body: unknown) => {
      head(status, { 'content-type': 'application/json' });
      end(JSON.stringify(body));
    };
    const expected = `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`;
    if (req.headers.authorization !== expected) return json(401, { code: 20003, message: 'Authenticate', status: 401 });
    const base = `/2010-04-01/Accounts/${this.accountSid}/Calls`;
    if (req.method === 'POST' && path === `${base}.json`) {
      const twiml = form.get('Twiml') ?? '';
      const url = /<Stream url="([^"]+)"/.exec(twiml)?.[1];
      if (!url || !form.get('To') || !form.get('From')) return json(400, { code: 21205, message: 'Url or Twiml is required', status: 400 });
      const parameters = Object.fromEntries([...twiml.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [unxml(m[1]!), unxml(m[2]!)]));
      const sid = `CA${Math.random().toString(16).slice(2).padEnd(32, '0')}`;
      const callback = form.get('StatusCallback')!;
      const call = { simId: '', callback, answeredAt: null as number | null, endedAt: null as number | null };
      this.calls.set(sid, call);
      const day = new CallbackDay(this.badDays.get(form.get('To')!));
      this.days.set(sid, day);
      call.simId = await this.carrier.dial(
        {
          callId: parameters.call_id ?? '',
          to: form.get('To')!,
          from: form.get('From'),
          streamUrl: unxml(url),
          streamParameters: parameters,
          ringTimeoutMs: 30_000,
          maxDurationMs: 600_000,
        },
        {
          ringing: () => void this.post(sid, 'ringing'),
          answered: () => {
            call.answeredAt = Date.now();
            day.answered(
              () => this.post(sid, 'in-progress'),
              () => this.post(sid, 'ringing', -5),
            );
          },
          ended: ({ status }) => {
            call.endedAt ??= Date.now();
            void this.ended(sid, status === 'busy' ? 'busy' : status === 'no_answer' ? 'no-answer' : status === 'failed' ? 'failed' : 'completed');
          },
        },
      );
      this.callIdOf.set(call.simId, parameters.call_id ?? '');
      this.sidOfSim.set(call.simId, sid);
      if (form.get('MachineDetection') && form.get('AsyncAmd') === 'true' && form.get('AsyncAmdStatusCallback')) {
        const steps = calleeOf(this.callees, form.get('To')!).steps;
        const spoken = steps.filter((st) => 'say' in st || 'beep_ms' in st);
        const beep = spoken.findIndex((st) => 'beep_ms' in st);
        const first = spoken[0] && 'say' in spoken[0] ? spoken[0].say : null;
        this.amd.set(sid, { url: form.get('AsyncAmdStatusCallback')!, to: form.get('To')!, said: 0, beepAfter: beep < 0 ? null : beep + 1, first });
      }
      return json(201, { sid, status: 'queued', to: form.get('To'), from: form.get('From') });
    }
    const one = new RegExp(`^${base}/(CA[0-9a-f]+)\\.json$`).exec(path);
    const sid = one?.[1];
    const call = sid === undefined ? undefined : this.calls.get(sid);
    if (sid !== undefined && !call) return json(404, { code: 20404, message: 'not found', status: 404 });
    if (req.method === 'GET' && sid !== undefined && call) {
      const over = call.endedAt !== null;
      const duration = !over ? null : call.answeredAt === null ? '0' : String(Math.round((call.endedAt! - call.answeredAt) / 1000));
      return json(200, { sid, status: over ? 'completed' : call.answeredAt !== null ? 'in-progress' : 'ringing', duration });
    }
    const twiml = form.get('Twiml');
    if (req.method === 'POST' && sid !== undefined && call && twiml !== null && form.get('Status') === null) {
      if (call.endedAt !== null || call.answeredAt === null)
        return json(400, { code: 21220, message: 'Call is not in-progress. Cannot redirect.', status: 400 });
      const to = /^<Response><Dial(?: callerId="[^"]*")?><Number>([^<]+)<\/Number><\/Dial><\/Response>$/.exec(twiml)?.[1];
      if (!to) return json(400, { code: 12100, message: 'Document parse failure', status: 400 });
      this.transfers.push({ sid, callId: this.callIdOf.get(call.simId) ?? '', twiml, to: unxml(to), at: Date.now() });
      this.onTransfer?.(sid);
      await this.carrier.transfer!(call.simId, unxml(to), null);
      return json(200, { sid, status: 'in-progress' });
    }
    if (req.method === 'POST' && sid !== undefined && call) {
      call.endedAt ??= Date.now();
      await this.carrier.hangup(call.simId);
      void this.ended(sid, form.get('Status') === 'canceled' ? 'canceled' : 'completed');
      return json(200, { sid, status: form.get('Status') });
    }
    json(404, { code: 20404, message: 'not found', status: 404 });
  }

  /**
   * An incoming call to the number `to` from `from`, as Twilio places one: the number's "A call comes
   * in" webhook (`webhook`) is POSTed the call's form, signed X-Twilio-Signature with the auth token
   * (`forgedWith`: another token), and its TwiML read: a `<Connect><Stream url>` is opened with its
   * `<Parameter>`s by the caller (the simulator's script whose `to` is `from`, speaking Media Streams);
   * a `<Say>` is heard and a `<Hangup/>` ends the call. No status callbacks: Twilio sends an inbound
   * call's to the number's own status URL, none of the gateway's.
   */
  async incoming(
    webhook: string,
    call: { to: string; from: string },
    forgedWith?: string,
  ): Promise<{ status: number; twiml: string; sid: string; said: string | null }> {
    const sid = `CA${Math.random().toString(16).slice(2).padEnd(32, '0')}`;
    const params: [string, string][] = [
      ['AccountSid', this.accountSid],
      ['ApiVersion', '2010-04-01'],
      ['CallSid', sid],
      ['CallStatus', 'ringing'],
      ['Called', call.to],
      ['Caller', call.from],
      ['Direction', 'inbound'],
      ['From', call.from],
      ['FromCountry', 'IN'],
      ['To', call.to],
      ['ToCountry', 'IN'],
    ];
    const res = await fetch(webhook, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(forgedWith ?? this.authToken, webhook, params) },
      body: new URLSearchParams(params).toString(),
    });
    const twiml = await res.text();
    const said = /<Say>([^<]*)<\/Say>/.exec(twiml)?.[1];
    const url = /<Connect><Stream url="([^"]+)">/.exec(twiml)?.[1];
    if (res.status !== 200 || !url) return { status: res.status, twiml, sid, said: said === undefined ? null : unxml(said) };
    const parameters = Object.fromEntries([...twiml.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [unxml(m[1]!), unxml(m[2]!)]));
    const leg = { simId: '', callback: '', answeredAt: null as number | null, endedAt: null as number | null };
    this.calls.set(sid, leg);
    // The caller's side of the line is the simulator's, scripted by the caller's number.
    leg.simId = await this.carrier.dial(
      {
        callId: parameters.call_id ?? '',
        to: call.from,
        from: call.to,
        streamUrl: unxml(url),
        streamParameters: parameters,
        ringTimeoutMs: 30_000,
        maxDurationMs: 600_000,
      },
      {
        ringing: () => undefined,
        answered: () => void (leg.answeredAt = Date.now()),
        ended: () => void (leg.endedAt ??= Date.now()),
      },
    );
    this.callIdOf.set(leg.simId, parameters.call_id ?? '');
    return { status: res.status, twiml, sid, said: null };
  }

  /** The callee finished a `say` or a beep: Twilio's AMD decides when it has heard enough (see the top). */
  private heardByAmd(simId: string): void {
    const sid = this.sidOfSim.get(simId);
    const amd = sid === undefined ? undefined : this.amd.get(sid);
    if (!amd || sid === undefined) return;
    amd.said += 1;
    const greeting = amd.first !== null && (this.saidMs.get(amd.first) ?? 0) >= 2400;
    const heard =
      amd.beepAfter !== null ? (amd.said === amd.beepAfter ? 'machine_end_beep' : null) : amd.said === 1 ? (greeting ? 'machine_end_silence' : 'human') : null;
    if (heard === null) return;
    const day = this.amdDays.get(amd.to) ?? {};
    if (day.drop) return;
    const answeredBy = day.answeredBy ?? heard;
    const send = async () => {
      for (let i = 0; i < (day.repeat ?? 1); i++) await this.postAmd(sid, amd.url, answeredBy);
    };
    const t = setTimeout(() => void send(), (heard === 'human' ? 500 : heard === 'machine_end_silence' ? 1200 : 0) + (day.delayMs ?? 0));
    this.amdTimers.add(t);
  }

  private readonly amdTimers = new Set<NodeJS.Timeout>();

  /** Twilio's AMD callback, signed as its status callbacks are. */
  private async postAmd(sid: string, url: string, answeredBy: string): Promise<void> {
    const call = this.calls.get(sid);
    const params: [string, string][] = [
      ['CallSid', sid],
      ['AccountSid', this.accountSid],
      ['AnsweredBy', answeredBy],
      ['MachineDetectionDuration', String(call?.answeredAt ? Date.now() - call.answeredAt : 0)],
    ];
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(this.authToken, url, params) },
      body: new URLSearchParams(params).toString(),
    }).catch(() => null);
    this.amdCallbacks.push({ sid, answeredBy, code: res?.status ?? 0 });
    await res?.text();
  }

  /** Twilio's sid of the call the gateway placed as `callId` (its StatusCallback names it). */
  sidOf(callId: string): string | undefined {
    return [...this.calls].find(([, c]) => c.callback.includes(`/calls/${callId}/`))?.[0];
  }

  private async ended(sid: string, status: string): Promise<void> {
    await (this.days.get(sid) ?? new CallbackDay()).ended(() => this.post(sid, status)); // repeated, as Twilio may
  }

  /** A signed status callback (`seqShift` < 0 sends it with an older sequence number: a stale one). */
  async post(sid: string, status: string, seqShift = 0): Promise<number> {
    const call = this.calls.get(sid);
    if (!call?.callback) return 0; // an incoming call's status goes to the number's URL, not the gateway's
    this.seq += 1;
    const params: [string, string][] = [
      ['CallSid', sid],
      ['AccountSid', this.accountSid],
      ['CallStatus', status],
      ['SequenceNumber', String(this.seq + seqShift)],
      ['Timestamp', new Date().toUTCString()],
    ];
    const seconds = status === 'completed' ? (call.answeredAt ? Math.round(((call.endedAt ?? Date.now()) - call.answeredAt) / 1000) : 0) : undefined;
    if (seconds !== undefined) params.push(['CallDuration', String(seconds)]);
    const res = await fetch(call.callback, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(this.authToken, call.callback, params) },
      body: new URLSearchParams(params).toString(),
    }).catch(() => null);
    this.callbacks.push({ sid, status, code: res?.status ?? 0, ...(seconds !== undefined ? { seconds } : {}) });
    await res?.text();
    return res?.status ?? 0;
  }

  async close(): Promise<void> {
    for (const day of this.days.values()) day.close();
    for (const t of this.amdTimers) clearTimeout(t);
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
