// The carrier side of bench:voice, in the bench's process: a Twilio whose REST API answers
// `Calls.json` (and hang-ups), whose signed status callbacks say ringing then answered, and which
// opens a Media Streams socket per call, as Twilio does. Each socket sends the callee's audio paced
// in real time, 20 ms frames sent once their 20 ms has passed (silence, or speech a leg was given
// to say), from one 10 ms timer for every leg that sends whatever frames are due (so the bench's
// own timer lag does not stretch the audio), and records when each frame left and when each of
// the gateway's `media` and `clear` frames arrived.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { twilioSignature } from '../src/providers/twilio/voice.ts';

export const FRAME_BYTES = 160;
export const FRAME_MS = 20;
const SILENCE = Buffer.alloc(FRAME_BYTES, 0xff);

/** One call as the carrier sees it. */
export class Leg {
  /** performance.now() of each agent `media` frame, and of each `clear`, as they arrived. */
  readonly media: number[] = [];
  readonly clears: number[] = [];
  ws: WebSocket | null = null;
  opened: Promise<void>;
  private open!: () => void;
  private startedAt = 0;
  private sent = 0;
  private speech: { frames: Buffer[]; next: number; sentAt: number[]; done: (sentAt: number[]) => void } | null = null;
  private waiters: (() => void)[] = [];

  constructor(readonly callId: string) {
    this.opened = new Promise((r) => (this.open = r));
  }

  /** Speaks `frames` (μ-law, 160 bytes each) as the next frames; resolves with when each left. */
  say(frames: Buffer[]): Promise<number[]> {
    return new Promise((done) => (this.speech = { frames, next: 0, sentAt: [], done }));
  }

  /** Until a `media` or `clear` frame arrives after `after` (performance.now()), or `timeoutMs`: its time, or null. */
  async next(kind: 'media' | 'clear', after: number, timeoutMs: number): Promise<number | null> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const hit = (kind === 'media' ? this.media : this.clears).find((t) => t > after);
      if (hit !== undefined) return hit;
      const left = deadline - performance.now();
      if (left <= 0) return null;
      await new Promise<void>((r) => {
        const timer = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          r();
        });
      });
    }
  }

  /** Until no agent `media` frame has arrived for `ms` (its reply played), or `timeoutMs` passed. */
  async quiet(ms: number, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline && performance.now() - (this.media.at(-1) ?? 0) < ms) await new Promise((r) => setTimeout(r, 50));
  }

  /** One WebSocket ping → pong on the call's own media socket, ms. */
  ping(): Promise<number> {
    return new Promise((resolve) => {
      const t0 = performance.now();
      this.ws!.once('pong', () => resolve(performance.now() - t0));
      this.ws!.ping();
    });
  }

  /** Sends the frames due by `now`: the speech it was given, else silence. */
  pump(now: number): void {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    for (; this.startedAt + (this.sent + 1) * FRAME_MS <= now; this.sent++) {
      const s = this.speech;
      const frame = s && s.next < s.frames.length ? s.frames[s.next++]! : SILENCE;
      ws.send(JSON.stringify({ event: 'media', streamSid: 'MZbench', media: { payload: frame.toString('base64') } }));
      if (s && frame !== SILENCE) {
        s.sentAt.push(performance.now());
        if (s.next === s.frames.length) {
          this.speech = null;
          s.done(s.sentAt);
        }
      }
    }
  }

  connect(url: string, parameters: Record<string, string>): void {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    this.ws = ws;
    ws.on('open', () => {
      ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
      ws.send(
        JSON.stringify({
          event: 'start',
          streamSid: 'MZbench',
          start: { streamSid: 'MZbench', customParameters: parameters, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } },
        }),
      );
      this.startedAt = performance.now();
      this.open();
    });
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as { event: string; mark?: { name: string } };
      if (m.event === 'media') this.media.push(performance.now());
      else if (m.event === 'clear') this.clears.push(performance.now());
      else if (m.event === 'mark') ws.send(JSON.stringify({ event: 'mark', streamSid: 'MZbench', mark: m.mark })); // played (the bench does not buffer)
      if (m.event === 'media' || m.event === 'clear') for (const w of this.waiters.splice(0)) w();
    });
    ws.on('error', () => undefined);
  }
}

export class BenchTwilio {
  readonly legs = new Map<string, Leg>();
  /** Every number a call was placed to, in order (bench:voice-batch counts each once per attempt). */
  readonly dialled: string[] = [];
  private readonly timer: NodeJS.Timeout;

  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly accountSid: string,
  ) {
    this.timer = setInterval(() => {
      const now = performance.now();
      for (const leg of this.legs.values()) leg.pump(now);
    }, 10);
    this.timer.unref();
  }

  /** `hangupAfterMs`: each callee hangs up (status `completed`) that long after its media stream opened. */
  static async start(accountSid: string, authToken: string, opts: { hangupAfterMs?: number } = {}): Promise<BenchTwilio> {
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        const placing = req.url?.endsWith('/Calls.json') ?? false;
        res.writeHead(placing ? 201 : 200, { 'content-type': 'application/json' });
        if (!placing) return res.end('{}'); // a hang-up
        const sid = `CA${Math.random().toString(16).slice(2).padEnd(32, '0')}`;
        res.end(JSON.stringify({ sid, status: 'queued' }));
        const twiml = form.get('Twiml')!;
        const url = /<Stream url="([^"]+)"/.exec(twiml)![1]!;
        const parameters = Object.fromEntries([...twiml.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [m[1]!, m[2]!]));
        const callback = form.get('StatusCallback')!;
        const post = (status: string) => {
          const params: [string, string][] = [
            ['CallSid', sid],
            ['CallStatus', status],
          ];
          return fetch(callback, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(authToken, callback, params) },
            body: new URLSearchParams(params).toString(),
          });
        };
        const leg = self.leg(parameters.call_id!);
        self.dialled.push(form.get('To') ?? '');
        void post('ringing')
          .then(() => post('in-progress'))
          .then(() => leg.connect(url, parameters))
          .then(() => (opts.hangupAfterMs === undefined ? undefined : setTimeout(() => void post('completed').catch(() => undefined), opts.hangupAfterMs)));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const self = new BenchTwilio(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, accountSid);
    return self;
  }

  /** The call's leg (made when the call is placed, or by whoever asks first). */
  leg(callId: string): Leg {
    let leg = this.legs.get(callId);
    if (!leg) this.legs.set(callId, (leg = new Leg(callId)));
    return leg;
  }

  close(): void {
    clearInterval(this.timer);
    for (const leg of this.legs.values()) leg.ws?.terminate();
    this.server.close();
  }
}
