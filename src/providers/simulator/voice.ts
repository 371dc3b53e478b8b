// The `simulator` carrier: a simulated callee, so calls run with no telephony account (the seeded
// `voice-local` model, and the tests). It behaves as a carrier does from the gateway's side: it
// reports ringing and an answer (or busy, no answer, failure) after the script's delay, then opens
// a real WebSocket to the call's stream URL and speaks a carrier's media protocol over it: Twilio's
// Media Streams by default (`connected`, `start` with the call's customParameters, `media` base64
// μ-law 8 kHz in 20 ms frames paced in real time, `dtmf`, `mark` echoes, `stop`), or another given
// as `wire` (src/providers/carrier-wire/: the fake Exotel of the tests runs these callees on Exotel's Voicebot
// protocol). What the gateway sends is "played" in real time (160 bytes per 20 ms of μ-law); a
// `mark` is echoed once the audio queued before it has played, or at once when a `clear` drops
// that audio (as Twilio and Exotel do); a media payload the carrier would not play is dropped.
//
// The callee follows its script (config `voice.simulator.callees`, the first whose `to` matches):
// `say` (text spoken by tts-local in the step's `voice`, default espeak-ng's `en-us`; festival's
// `en-us-slt` sounds far more like a person), `silence_ms`,
// `dtmf`, `wait_agent` (`done`: the agent's reply played and `ms` of quiet after it; `speaking`:
// the agent has been playing for `ms`, so a `say` next barges in), `hangup`, `beep_ms` (a voicemail's, `beep_hz`). When its steps run out
// it stays on the line, silent, until the gateway hangs up. A script's `noise` (a level in dBFS,
// white or pink: src/speech/noise.ts) is line noise under all the callee sends, speech and
// silences, from its `after_ms` into the stream on (at its `before_dbfs` before that, if given).
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import WebSocket from 'ws';
import type { CalleeScript } from '../../config.ts';
import type { SpeechClip } from '../../speech/clip.ts';
import { g711Decode, g711Encode } from '../../speech/g711.ts';
import { addNoise, lineNoise, type NoiseSource } from '../../speech/noise.ts';
import { bytesOf, samplesOf } from '../../speech/pcm.ts';
import { toneClip } from '../../speech/tone.ts';
import type { Carrier, CarrierEvents, DialRequest } from '../carrier.ts';
import { twilioWire } from '../carrier-wire/twilio.ts';
import type { CalleeWire, WireProtocol } from '../carrier-wire/types.ts';
import { putThrough } from './transfer.ts';

/** Without agent audio this long, its reply counts as over (a late frame is not an end). */
const GAP_MS = 200;
/** How often a script step waiting for something looks again. */
const POLL_MS = 20;
/** A `wait_agent` that the agent never satisfies gives up after this (the script goes on). */
const WAIT_LIMIT_MS = 30_000;

export interface SimulatorOptions {
  callees: readonly CalleeScript[];
  /** Speech for a `say` step, 8 kHz (the tts-local engines: espeak-ng, festival for `en-us-slt`). */
  speak(text: string, voice: string): Promise<SpeechClip>;
  logger: Logger;
  /** The protocol the callees' streams speak (default Twilio's Media Streams). */
  wire?: WireProtocol;
  /** Told each frame the gateway sends a callee (its event, and a media payload's bytes): the fake carriers' record. */
  onGatewayFrame?(callSid: string, event: string, payloadBytes: number, payload?: Buffer): void;
  /**
   * What the line does when the gateway refuses the stream's handshake: `hang_up` (the default: the
   * call ends at once), or `dead_air`, Exotel's: one retry, then the answered line stays up, silent
   * (and billed), until the call's maximum.
   */
  refusedStream?: 'hang_up' | 'dead_air';
  /**
   * Where an answered call's stream goes, asked at the answer: its URL, the start's parameters and
   * the callee's end of its protocol (an Exotel flow's applet, whose URL answers the stream URL and
   * its rate); null: no stream (as refused). Default: the dial's stream URL and parameters, `wire`.
   */
  streamAt?(callSid: string, req: DialRequest): Promise<{ url: string; parameters: Record<string, string>; wire?: CalleeWire } | null>;
  /**
   * Told when the gateway's audio first reaches a callee after it finished a `say`: the ms since the
   * last frame of its speech went out (the reply's delay as the carrier sees it).
   */
  onReply?(callSid: string, delayMs: number): void;
  /** Told when the last frame of a `say` step's speech was sent (epoch ms): when the callee stopped, as the line saw it. */
  onSaid?(callSid: string, at: number): void;
  /** Told when a transferred call's party (its transfer callee) answered or not, once its part is over. */
  onTransferred?(callSid: string, to: string, answered: boolean): void;
}

/** The script for a dialled number: the first callee whose `to` is it, or `*`. */
function calleeFor(callees: readonly CalleeScript[], to: string): CalleeScript {
  return callees.find((c) => c.to === to) ?? callees.find((c) => c.to === '*') ?? { to: '*', answer: 'answer', steps: [] };
}

/** The simulator's carrier, which also places calls *to* the gateway (its inbound calls: src/voice/inbound-simulator.ts). */
export interface SimulatorCarrier extends Carrier {
  /**
   * The caller at `from` (its script: the callee whose `to` is `from`) rings the gateway's number
   * `to`; `answer` is the gateway's (given the call's sid and where to tell its news), resolving with
   * the stream to open, or null when it refused the call (the caller hangs up). Resolves with the sid.
   */
  ring(call: { to: string; from: string }, answer: (callSid: string, attach: (events: CarrierEvents) => void) => Promise<Stream | null>): Promise<string>;
}

type Stream = { url: string; parameters: Record<string, string> };

export function simulatorCarrier(opts: SimulatorOptions): SimulatorCarrier {
  const calls = new Map<string, SimulatedCall>();
  return {
    async ring(call, answer) {
      const id = `SIM${randomBytes(12).toString('hex')}`;
      let told: CarrierEvents | null = null;
      const stream = await answer(id, (events) => (told = events));
      if (!stream) return id;
      const req: DialRequest = { callId: '', ...call, streamUrl: stream.url, streamParameters: stream.parameters, ringTimeoutMs: 0, maxDurationMs: 3_600_000 };
      // The gateway took the call: the caller is on the line at once, its news told to the call once it was adopted.
      const script = { ...calleeFor(opts.callees, call.from), answer: 'answer' as const, ring_ms: 0 };
      const relay: CarrierEvents = { ringing: () => undefined, answered: () => undefined, ended: (outcome) => told?.ended(outcome) };
      const caller = new SimulatedCall(id, req, script, relay, opts, () => calls.delete(id));
      calls.set(id, caller);
      caller.start();
      return id;
    },
    wire: opts.wire ?? twilioWire,
    async dial(req, events) {
      const id = `SIM${randomBytes(12).toString('hex')}`;
      const call = new SimulatedCall(id, req, calleeFor(opts.callees, req.to), events, opts, () => calls.delete(id));
      calls.set(id, call);
      call.start();
      return id;
    },
    async hangup(id) {
      calls.get(id)?.hangup();
    },
    async transfer(id, to) {
      const call = calls.get(id);
      if (!call) throw new Error(`simulator: no call ${id} to transfer`);
      call.transfer(to, calleeFor(opts.callees, to));
    },
  };
}

class SimulatedCall {
  private ws: WebSocket | null = null;
  private readonly timers = new Set<NodeJS.Timeout>();
  private over = false;
  private streamSid = `MZ${randomBytes(16).toString('hex')}`;
  private seq = 0;
  /** Our speech waiting to be sent, and the agent's audio waiting to "play". */
  private speech: Buffer[] = [];
  private playing: Buffer[] = [];
  private playedBytes = 0;
  private queuedBytes = 0;
  private marks: { name: string; at: number }[] = [];
  /** When the agent's current audio began playing and when it last stopped (epoch ms). */
  private agentSince: number | null = null;
  private agentQuietSince = Date.now();
  private agentSpokeAfter = 0;
  /** Frames played with nothing from the agent since its last audio (a short gap is jitter, not the end). */
  private emptyFrames = 0;
  private pacer: NodeJS.Timeout | null = null;
  private readonly abort = new AbortController();
  private wire: CalleeWire;
  /** Bytes of audio in one frame of the callee's (and played per frame of the gateway's). */
  private frameBytes: number;
  /** The line's noise (the script's `noise`), under every frame the callee sends from `noiseFrom` (its frame number) on; `before` until then. */
  private readonly noise: NoiseSource | null;
  private readonly before: NoiseSource | null;
  private readonly noiseFrom: number;
  private framesSent = 0;
  /** When the last frame of the callee's speech went out, until the gateway's audio next arrives (see `onReply`). */
  private saidAt: number | null = null;

  constructor(
    readonly id: string,
    private readonly req: DialRequest,
    private readonly script: CalleeScript,
    private readonly events: CarrierEvents,
    private readonly opts: SimulatorOptions,
    private readonly forget: () => void,
  ) {
    this.wire = (opts.wire ?? twilioWire).carrier;
    this.frameBytes = this.wire.frameMs * this.wire.bytesPerMs;
    const noise = script.noise;
    this.noise = noise ? lineNoise(noise.dbfs, noise.color ?? 'white') : null;
    this.before = noise?.before_dbfs !== undefined ? lineNoise(noise.before_dbfs, noise.color ?? 'white', 2) : null;
    this.noiseFrom = Math.round((noise?.after_ms ?? 0) / this.wire.frameMs);
  }

  /** The script's speech, rendered while it rings (a `say` then starts at once, as a person speaks). */
  private readonly spoken = new Map<string, Promise<SpeechClip>>();

  start(): void {
    for (const step of this.script.steps) {
      if (!('say' in step)) continue;
      const key = `${step.voice ?? 'en-us'}:${step.say}`;
      if (!this.spoken.has(key)) {
        const audio = this.opts.speak(step.say, step.voice ?? 'en-us');
        audio.catch(() => undefined); // reported when the step runs
        this.spoken.set(key, audio);
      }
    }
    this.later(10, () => this.events.ringing());
    this.later(this.script.ring_ms ?? 1000, () => {
      switch (this.script.answer) {
        case 'busy':
          return this.end({ status: 'busy' });
        case 'fail':
          return this.end({ status: 'failed' });
        case 'no_answer':
          return; // it rings until the gateway gives up (ring timeout) or hangs up
        default:
          this.events.answered();
          if (this.script.stream !== false) void this.open();
      }
    });
  }

  /** The party a transfer put the callee through to, while that part of the call lasts. */
  private party: AbortController | null = null;

  /**
   * The carrier bridged the call to `to` (Twilio's `<Dial>`): the media stream ends (`stop`, then
   * closed), the callee's script stops (they talk to the person now: src/providers/simulator/transfer.ts),
   * and the call ends when that part does.
   */
  transfer(to: string, script: CalleeScript): void {
    if (this.over || this.party) return;
    this.party = new AbortController();
    this.abort.abort();
    if (this.pacer) clearInterval(this.pacer);
    this.pacer = null;
    this.send(this.wire.stop(this.id));
    this.ws?.close(1000);
    void putThrough(script, this.party.signal).then(({ answered }) => {
      this.opts.onTransferred?.(this.id, to, answered);
      this.end({});
    });
  }

  /** The gateway hung up (or cancelled): the line and the stream close; no news is sent back. */
  hangup(): void {
    if (this.over) return;
    this.finish();
  }

  private later(ms: number, work: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.over) work();
    }, ms);
    this.timers.add(t);
  }

  private end(outcome: Parameters<CarrierEvents['ended']>[0]): void {
    if (this.over) return;
    this.finish();
    this.events.ended(outcome);
  }

  private finish(): void {
    this.over = true;
    this.abort.abort();
    this.party?.abort();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    if (this.pacer) clearInterval(this.pacer);
    const ws = this.ws;
    if (ws && ws.readyState === WebSocket.OPEN) {
      this.send(this.wire.stop(this.id));
      ws.close(1000);
    } else ws?.terminate();
    this.forget();
  }

  private send(frame: Record<string, unknown>): void {
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    this.seq += 1;
    this.ws.send(JSON.stringify(this.wire.stamp(frame, this.seq, this.streamSid)));
  }

  /** The stream, where the call's says (`streamAt`), in its protocol. */
  private async open(retried = false): Promise<void> {
    const at = this.opts.streamAt
      ? await this.opts.streamAt(this.id, this.req).catch(() => null)
      : { url: this.req.streamUrl, parameters: this.req.streamParameters };
    if (this.over) return;
    if (at?.wire) {
      this.wire = at.wire;
      this.frameBytes = this.wire.frameMs * this.wire.bytesPerMs;
    }
    try {
      if (at) return this.connect(at, retried);
    } catch {
      // a URL the socket cannot open
    }
    this.refused(retried);
  }

  /** The stream could not be opened: the line drops, or (Exotel) the handshake is retried once and then the line stays up in silence until the call's maximum. */
  private refused(retried: boolean): void {
    if (this.opts.refusedStream !== 'dead_air') return this.end({});
    if (!retried) return this.later(500, () => void this.open(true));
    this.later(this.req.maxDurationMs, () => this.end({}));
  }

  private connect(at: { url: string; parameters: Record<string, string> }, retried: boolean): void {
    const ws = new WebSocket(at.url, { perMessageDeflate: false });
    this.ws = ws;
    let opened = false;
    ws.on('error', (err) => this.opts.logger.debug({ err, call_sid: this.id }, 'simulated callee: stream error'));
    ws.on('close', () => {
      if (this.over || this.party) return; // a transfer's end of the stream is not the line's
      if (!opened) return this.refused(retried);
      // The gateway closed the stream without hanging up: the line drops.
      this.end({});
    });
    ws.on('open', () => {
      opened = true;
      ws.send(JSON.stringify(this.wire.connected()));
      this.send(this.wire.start({ streamSid: this.streamSid, callSid: this.id, parameters: at.parameters }));
      this.pace();
      void this.run().catch((err: unknown) => this.opts.logger.warn({ err, call_sid: this.id }, 'simulated callee: script failed'));
    });
    ws.on('message', (data, binary) => {
      if (binary) return;
      let m: { event?: string; media?: { payload?: string }; mark?: { name?: string } };
      try {
        m = JSON.parse(String(data)) as typeof m;
      } catch {
        return;
      }
      const media = m.event === 'media' && typeof m.media?.payload === 'string' ? Buffer.from(m.media.payload, 'base64') : null;
      if (typeof m.event === 'string') this.opts.onGatewayFrame?.(this.id, m.event, media?.length ?? 0, media ?? undefined);
      if (media) {
        if (this.saidAt !== null) this.opts.onReply?.(this.id, Date.now() - this.saidAt);
        this.saidAt = null;
        if (!this.wire.playable(media.length))
          return this.opts.logger.warn({ call_sid: this.id, bytes: media.length }, 'simulated callee: a media payload the carrier would not play');
        this.playing.push(media);
        this.queuedBytes += media.length;
      } else if (m.event === 'mark' && typeof m.mark?.name === 'string') {
        this.marks.push({ name: m.mark.name, at: this.queuedBytes });
        this.echoMarks();
      } else if (m.event === 'clear') {
        // The queued audio is dropped; its marks come back at once.
        this.playing = [];
        this.queuedBytes = this.playedBytes;
        for (const mark of this.marks) this.send(this.wire.mark(mark.name));
        this.marks = [];
        this.agentStopped();
        this.agentQuietSince = Date.now();
      }
    });
  }

  /** Every frame's length of wall time (20 ms, Exotel's 100): one frame of ours out (speech or silence), one frame of theirs played. */
  private pace(): void {
    const started = Date.now();
    const frameMs = this.wire.frameMs;
    let frames = 0;
    this.pacer = setInterval(
      () => {
        const due = Math.floor((Date.now() - started) / frameMs);
        for (; frames < due && !this.over; frames++) {
          const saying = this.speech.length > 0;
          this.send(this.wire.media(frames + 1, frames * frameMs, this.nextFrame()));
          if (saying && this.speech.length === 0) this.opts.onSaid?.(this.id, Date.now());
          this.play();
        }
      },
      Math.min(frameMs, POLL_MS),
    );
  }

  private nextFrame(): Buffer {
    const out = Buffer.alloc(this.frameBytes, this.wire.silence);
    let filled = 0;
    while (filled < this.frameBytes && this.speech.length > 0) {
      const head = this.speech[0]!;
      const n = Math.min(head.length, this.frameBytes - filled);
      head.copy(out, filled, 0, n);
      filled += n;
      if (n === head.length) this.speech.shift();
      else this.speech[0] = head.subarray(n);
    }
    if (filled > 0) this.saidAt = this.speech.length === 0 ? Date.now() : null;
    const noise = this.framesSent++ >= this.noiseFrom ? this.noise : this.before;
    return noise ? this.noisy(out, noise) : out;
  }

  /** A frame with the line's noise added (decoded, mixed, encoded again). */
  private noisy(frame: Buffer, noise: NoiseSource): Buffer {
    const mulaw = this.wire.audio === 'mulaw';
    const samples = mulaw ? g711Decode('mulaw', frame) : samplesOf(frame).slice();
    addNoise(samples, noise);
    return mulaw ? Buffer.from(g711Encode('mulaw', samples)) : Buffer.from(bytesOf(samples));
  }

  private play(): void {
    let left = this.frameBytes;
    while (left > 0 && this.playing.length > 0) {
      const head = this.playing[0]!;
      const n = Math.min(head.length, left);
      left -= n;
      this.playedBytes += n;
      if (n === head.length) this.playing.shift();
      else this.playing[0] = head.subarray(n);
    }
    if (left < this.frameBytes) {
      this.emptyFrames = 0;
      this.agentQuietSince = Date.now();
      if (this.agentSince === null) {
        this.agentSince = Date.now();
        this.agentSpokeAfter += 1;
      }
    } else if (this.agentSince !== null && ++this.emptyFrames * this.wire.frameMs >= GAP_MS) this.agentStopped();
    this.echoMarks();
  }

  private agentStopped(): void {
    if (this.agentSince === null) return;
    this.agentSince = null;
  }

  private echoMarks(): void {
    while (this.marks.length > 0 && this.marks[0]!.at <= this.playedBytes) this.send(this.wire.mark(this.marks.shift()!.name));
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    for (const step of this.script.steps) {
      if (this.over || this.party) return; // after a transfer the callee talks to the person
      if ('say' in step || 'beep_ms' in step) {
        const clip = 'say' in step ? await this.spoken.get(`${step.voice ?? 'en-us'}:${step.say}`)! : toneClip(step.beep_hz ?? 1000, step.beep_ms);
        if (this.over) return;
        this.speech.push(this.wire.encode?.(clip) ?? clip.as(this.wire.audio));
        await this.until(() => this.speech.length === 0, signal, 600_000);
      } else if ('silence_ms' in step) {
        await sleep(step.silence_ms, undefined, { signal }).catch(() => undefined);
      } else if ('dtmf' in step) {
        for (const digit of step.dtmf) {
          this.send(this.wire.dtmf(digit));
          await sleep(step.gap_ms ?? 100, undefined, { signal }).catch(() => undefined);
        }
      } else if ('wait_agent' in step) {
        const ms = step.ms ?? 0;
        if (step.wait_agent === 'speaking') {
          await this.until(() => this.agentSince !== null && Date.now() - this.agentSince >= ms, signal, WAIT_LIMIT_MS);
        } else {
          // A reply that started after this step (or is playing now), then `ms` of quiet.
          const spoken = this.agentSince !== null ? this.agentSpokeAfter - 1 : this.agentSpokeAfter;
          await this.until(() => this.agentSpokeAfter > spoken && this.agentSince === null && Date.now() - this.agentQuietSince >= ms, signal, WAIT_LIMIT_MS);
        }
      } else if ('hangup' in step) {
        return this.end({});
      }
    }
  }

  private async until(ready: () => boolean, signal: AbortSignal, limitMs: number): Promise<void> {
    const deadline = Date.now() + limitMs;
    while (!ready() && !signal.aborted && Date.now() < deadline) await sleep(POLL_MS);
  }
}
