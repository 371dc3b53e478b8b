// One call's live side: the call actor's in-memory resources, never persisted. It dials through the
// carrier and turns the carrier's news into the actor's events; once the carrier's media stream is
// attached (src/ws/voice.ts, after the `start` frame carried the call's token) it runs the media loop:
//   carrier frames → μ-law decode → VAD (the realtime path's detector) → an utterance per speech →
//   the call's stt model → the agent → its reply's pre-rendered μ-law → 20 ms frames paced in real
//   time with a `mark` every 200 ms → the carrier.
// Barge-in: callee speech (the detector's `min_speech_ms`) while the agent plays stops the playback
// between two frames and sends the carrier's `clear` at once; the marks echoed before it tell how
// much the callee heard, and the agent's turn keeps `heard_text`: its text cut there.
// The actor gets control events only (turns, actions, a heartbeat a second, an end it decided);
// audio never enters it.
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { EndReason, Turn, VoiceCallEvent } from '../../machines/voice-call.machine.ts';
import { g711Decode } from '../speech/g711.ts';
import type { VoiceDetector, VoiceDetectors } from '../speech/vad.ts';
import { AudioBuffer } from '../realtime/audio-buffer.ts';
import type { AgentReply, CallAgent } from './agent.ts';
import type { Carrier, DialRequest } from './carrier.ts';
import type { CallResources } from './kind.ts';
import type { Pacer } from './pacer.ts';
import type { DialInput } from '../../machines/voice-call.machine.ts';

const RATE = 8000;
const FRAME_BYTES = 160;
const FRAME_MS = 20;
/** A mark after every this many frames (200 ms): the resolution of `heard_text`. */
const FRAMES_PER_MARK = 10;
const HEARTBEAT_MS = 1000;
/** How far ahead of real time the playback runs (the carrier's buffer against our timer's jitter). */
const LEAD_MS = 40;
const PREFIX_MS = 300;
const MAX_UTTERANCE_MS = 30_000;
/** The credit guard's wording ends this long before the call's limit (timers, the last mark's echo, the end's write). */
const CREDIT_MARGIN_MS = 1000;

/** What the media loop sends the carrier and how it closes the stream (the WebSocket edge's side). */
export interface MediaStream {
  send(frame: Record<string, unknown>): void;
  close(code: number, reason: string): void;
}

export interface TurnSettings {
  /** Silence that ends the callee's utterance. */
  endpointingMs: number;
  interruption: { enabled: boolean; minSpeechMs: number; ignore: string[] };
}

export interface CallMediaDeps {
  callId: string;
  /** The model's usable carrier routes, in order: a dial that one refuses goes to the next (before any answer). */
  carriers: { route: number; carrier: Carrier }[];
  /** The call's actor (the runtime's ref). */
  actor: { send(event: VoiceCallEvent, opts: { wait: 'applied' | 'durable' }): Promise<unknown> };
  streamUrl: string;
  /** The one-time token the stream's `start` frame must carry. */
  token: string;
  agent: CallAgent;
  detectors(): Promise<VoiceDetectors>;
  /** The call's stt model on one utterance (8 kHz PCM); '' when nothing was heard. */
  recognise(samples: Int16Array, signal: AbortSignal): Promise<string>;
  turn: TurnSettings;
  mediaTimeoutMs: number;
  /**
   * The call's maximum when the wallet set it: the credit guard plays the agent's low-balance
   * wording so that it ends before that limit, then ends the call `insufficient_credit`. Null: the
   * client set the maximum (the actor ends the call `max_duration` there).
   */
  creditLimitMs: number | null;
  /** The silence watchdog: prompt after this long without speech, at most this many times, then end. */
  idle: { promptAfterMs: number; maxPrompts: number };
  log: Logger;
  now(): number;
  /** Called once when the call's live side is gone (its slot on this instance freed). */
  onDisposed(): void;
  /** The instance's playback clock (one timer for every call). */
  pacer: Pacer;
}

interface Playback {
  startedAt: number;
  /** Marks sent: name → bytes of the reply sent before it. */
  marks: Map<string, number>;
  heardBytes: number;
  abort: AbortController;
  done: Promise<void>;
  /** Resolves `done` when the reply has played (its last mark is back); true when it has. */
  checkPlayed?: () => boolean;
}

export class CallMedia implements CallResources {
  private carrierCallId: string | null = null;
  private carrier: Carrier | null = null;
  private answeredAt: number | null = null;
  private carrierEnded = false;
  private stream: MediaStream | null = null;
  private streamSid: string | null = null;
  private started = false;
  private hungUp = false;
  private disposed = false;
  private lastFrameAt = 0;
  private watchdog: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private creditGuard: NodeJS.Timeout | null = null;
  private creditGuardArmed = false;
  /** The credit guard's last words are playing: nothing else is said, and they are not cut. */
  private closing = false;
  private vad: VoiceDetector | null = null;
  private readonly buffer = new AudioBuffer(((MAX_UTTERANCE_MS + PREFIX_MS + 2000) * RATE) / 1000);
  private speechStart: number | null = null;
  /** Where the current speech was first heard (detector ms, without the prefix padding). */
  private speechOnsetMs = 0;
  private playback: Playback | null = null;
  private markSeq = 0;
  private agentTurns = 0;
  /** Callee utterances are answered one at a time, in order. */
  private queue: Promise<void> = Promise.resolve();
  /** Turns being recognised or answered (the silence watchdog waits for them). */
  private busy = 0;
  /** The last time anyone spoke (or a reply ended): the silence watchdog's base. */
  private lastActivityAt = 0;
  private prompts = 0;
  private readonly abort = new AbortController();

  constructor(private readonly deps: CallMediaDeps) {}

  // ---- the actor's effects (CallResources) ----

  async dial(input: DialInput): Promise<string> {
    const req: DialRequest = {
      callId: this.deps.callId,
      to: input.to,
      from: input.from,
      streamUrl: this.deps.streamUrl,
      streamParameters: { call_id: this.deps.callId, token: this.deps.token },
      ringTimeoutMs: input.ringTimeoutMs,
      maxDurationMs: input.maxDurationMs,
    };
    const tell = (event: VoiceCallEvent) =>
      void this.deps.actor.send(event, { wait: 'applied' }).catch((err: unknown) => this.deps.log.warn({ err, event: event.type }, 'call actor did not take carrier news'));
    const events = {
      ringing: () => tell({ type: 'carrier.ringing', now: this.deps.now() }),
      answered: () => {
        this.answeredAt = this.deps.now();
        this.arm(); // the stream must start within the media timeout
        tell({ type: 'carrier.answered', now: this.answeredAt });
      },
      ended: (outcome: Parameters<Parameters<Carrier['dial']>[1]['ended']>[0]) => {
        this.carrierEnded = true;
        tell({ type: 'carrier.ended', now: this.deps.now(), ...outcome });
      },
    };
    // Failover before an answer only: a route that refuses the call (its API down, a bad account)
    // passes it to the next; once a carrier took it, its callee's answer (busy too) is the answer.
    let lastError: unknown = new Error('no carrier');
    for (const { route, carrier } of this.deps.carriers) {
      try {
        const id = await carrier.dial(req, events);
        this.carrier = carrier;
        this.carrierCallId = id;
        return `${route}:${id}`;
      } catch (err) {
        lastError = err;
        this.deps.log.warn({ err, route }, 'carrier refused the call; trying the next route');
      }
    }
    throw lastError;
  }

  answered(at: number): void {
    // The simulator told the answer already; a carrier whose news comes by callback (Twilio) did not.
    if (this.answeredAt === null) {
      this.answeredAt = at;
      this.arm();
    }
    if (this.deps.creditLimitMs !== null && !this.creditGuardArmed && !this.hungUp && !this.disposed) {
      this.creditGuardArmed = true;
      void this.armCreditGuard(at + this.deps.creditLimitMs);
    }
  }

  async hangup(_reason: EndReason): Promise<void> {
    if (this.hungUp) return;
    this.hungUp = true;
    this.stopPlayback();
    this.stopTimers();
    this.stream?.close(1000, 'call ended');
    if (this.carrier && this.carrierCallId !== null && !this.carrierEnded) await this.carrier.hangup(this.carrierCallId).catch((err: unknown) => this.deps.log.warn({ err }, 'carrier hang-up failed'));
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.abort.abort();
    this.stopPlayback();
    this.stopTimers();
    this.vad?.destroy();
    this.vad = null;
    if (!this.hungUp && this.carrier && this.carrierCallId !== null && !this.carrierEnded) void this.carrier.hangup(this.carrierCallId).catch(() => undefined);
    this.stream?.close(1001, 'going away');
    this.deps.onDisposed();
  }

  // ---- the carrier's media stream (src/ws/voice.ts) ----

  /** A stream socket closed: when it was the call's, the callee's line is gone. */
  detached(stream: MediaStream): void {
    if (stream !== this.stream || this.hungUp || this.disposed) return;
    this.stream = null;
    void this.end('callee_hangup');
  }

  /**
   * One frame of Twilio's Media Streams protocol, parsed, from a stream socket: the socket becomes
   * the call's with a `start` frame carrying its token; before that (or from another socket) its
   * frames are refused. Returns why a frame is refused, or null.
   */
  frame(stream: MediaStream, m: Record<string, unknown>): string | null {
    const event = m.event;
    if (event === 'connected') return null;
    if (event === 'start') {
      const start = (m.start ?? {}) as { customParameters?: Record<string, unknown>; streamSid?: unknown };
      const token = start.customParameters?.token;
      if (this.started || this.hungUp || this.disposed) return 'the stream has started already';
      if (typeof token !== 'string' || !this.tokenMatches(token)) return 'bad token';
      this.started = true;
      this.lastActivityAt = this.deps.now();
      this.stream = stream;
      this.lastFrameAt = this.deps.now();
      this.streamSid = typeof start.streamSid === 'string' ? start.streamSid : typeof m.streamSid === 'string' ? m.streamSid : null;
      void this.begin().catch((err: unknown) => {
        this.deps.log.error({ err }, 'the media loop could not start');
        void this.end('media_timeout');
      });
      return null;
    }
    if (stream !== this.stream) return 'no start frame yet';
    this.lastFrameAt = this.deps.now();
    if (event === 'media') {
      const payload = (m.media as { payload?: unknown } | undefined)?.payload;
      if (typeof payload !== 'string' || payload.length > 8192) return 'bad media payload';
      this.audio(Buffer.from(payload, 'base64'));
      return null;
    }
    if (event === 'mark') {
      const name = (m.mark as { name?: unknown } | undefined)?.name;
      if (typeof name === 'string') this.marked(name);
      return null;
    }
    if (event === 'dtmf') {
      const digit = (m.dtmf as { digit?: unknown } | undefined)?.digit;
      if (typeof digit === 'string' && /^[0-9*#]$/.test(digit)) this.dtmf(digit);
      return null;
    }
    if (event === 'stop') {
      void this.end('callee_hangup');
      return null;
    }
    return 'unknown event';
  }

  private tokenMatches(token: string): boolean {
    const a = Buffer.from(token);
    const b = Buffer.from(this.deps.token);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  private async begin(): Promise<void> {
    const detectors = await this.deps.detectors();
    if (this.hungUp || this.disposed) return;
    this.vad = detectors.create({ sampleRate: RATE, silence_duration_ms: this.deps.turn.endpointingMs, prefix_padding_ms: PREFIX_MS });
    this.heartbeat = setInterval(() => void this.deps.actor.send({ type: 'media.heartbeat', now: this.deps.now() }, { wait: 'applied' }).catch(() => undefined), HEARTBEAT_MS);
    this.heartbeat.unref();
    this.queue = this.queue.then(async () => {
      const opening = await this.deps.agent.opening().catch((err: unknown) => {
        this.deps.log.warn({ err }, 'the agent could not open');
        return null;
      });
      if (opening) await this.say(opening, null);
    });
  }

  /** Arms the media watchdog: no stream start (or no frame) for mediaTimeoutMs ends the call. */
  private arm(): void {
    this.lastFrameAt = this.deps.now();
    this.watchdog = setInterval(() => {
      if (this.deps.now() - this.lastFrameAt >= this.deps.mediaTimeoutMs) void this.end('media_timeout');
      else this.checkIdle();
    }, Math.min(250, this.deps.mediaTimeoutMs));
    this.watchdog.unref();
  }

  /**
   * The silence watchdog: nobody has spoken for `idle.promptAfterMs` (the agent silent, the callee
   * too, no turn in hand): the agent prompts, up to `maxPrompts` times; silence after the last one
   * ends the call (`silence_timeout`). Independent of the pipeline: a call never stays up unheard.
   */
  private checkIdle(): void {
    if (!this.started || this.closing || this.playback || this.speechStart !== null || this.busy > 0 || this.hungUp) return;
    if (this.deps.now() - this.lastActivityAt < this.deps.idle.promptAfterMs) return;
    this.lastActivityAt = this.deps.now();
    if (this.prompts >= this.deps.idle.maxPrompts) return void this.end('silence_timeout');
    this.prompts += 1;
    this.busy += 1;
    this.queue = this.queue
      .then(async () => {
        const prompt = await this.deps.agent.prompt();
        if (prompt) await this.say(prompt, null);
      })
      .catch((err: unknown) => this.deps.log.warn({ err }, 'the idle prompt failed'))
      .finally(() => {
        this.busy -= 1;
        this.lastActivityAt = this.deps.now();
      });
  }

  private stopTimers(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.creditGuard) clearTimeout(this.creditGuard);
    this.watchdog = this.heartbeat = this.creditGuard = null;
  }

  /**
   * The credit guard: the low-balance wording (rendered now, so its length is known) starts its
   * length and a margin before `deadline`; whatever the agent is saying then is cut (the carrier
   * told to clear), the wording plays to its end whatever the callee says, and the call ends
   * `insufficient_credit`. An agent without such a wording leaves the end to the actor, at the limit.
   */
  private async armCreditGuard(deadline: number): Promise<void> {
    const words = await this.deps.agent.lowBalance().catch((err: unknown) => {
      this.deps.log.warn({ err }, 'the low-balance wording could not be rendered');
      return null;
    });
    if (!words || this.hungUp || this.disposed) return;
    const playMs = Math.ceil(words.audio.length / FRAME_BYTES) * FRAME_MS;
    this.creditGuard = setTimeout(() => void this.closeForCredit(words), Math.max(0, deadline - CREDIT_MARGIN_MS - playMs - this.deps.now()));
    this.creditGuard.unref();
  }

  private async closeForCredit(words: AgentReply): Promise<void> {
    this.closing = true;
    this.cutPlayback();
    await this.say(words, null, true).catch((err: unknown) => this.deps.log.warn({ err }, 'the low-balance wording did not play'));
    await this.end('insufficient_credit');
  }

  /** The media loop decided the call ends. */
  private async end(reason: EndReason): Promise<void> {
    if (this.hungUp || this.disposed) return;
    this.stopTimers();
    await this.deps.actor.send({ type: 'media.ending', now: this.deps.now(), reason }, { wait: 'durable' }).catch((err: unknown) => this.deps.log.warn({ err, reason }, 'call actor did not take the end'));
  }

  private record(event: VoiceCallEvent): void {
    void this.deps.actor.send(event, { wait: 'applied' }).catch((err: unknown) => this.deps.log.warn({ err, event: event.type }, 'call actor did not take an event'));
  }

  /** Seconds since the answer. */
  private clock(at = this.deps.now()): number {
    return Math.round((at - (this.answeredAt ?? at)) / 10) / 100;
  }

  // ---- listening ----

  private audio(bytes: Buffer): void {
    const vad = this.vad;
    if (!vad) return;
    const samples = g711Decode('mulaw', bytes);
    this.buffer.append(samples);
    for (const e of vad.push(samples)) {
      if (e.type === 'speech_started') {
        // audio_start_ms includes the prefix padding already.
        this.speechStart = Math.max(0, Math.floor((e.audio_start_ms * RATE) / 1000));
        this.speechOnsetMs = e.audio_start_ms + PREFIX_MS;
      } else {
        const start = this.speechStart ?? this.buffer.first;
        const end = Math.floor((e.audio_end_ms * RATE) / 1000);
        this.speechStart = null;
        const utterance = this.buffer.slice(start, end);
        this.buffer.trim(end);
        const at = this.deps.now();
        const startedAt = at - (utterance.length * 1000) / RATE;
        this.busy += 1;
        this.prompts = 0; // the callee is there
        this.queue = this.queue
          .then(() => this.answer(utterance, startedAt, at))
          .catch((err: unknown) => this.deps.log.warn({ err }, 'a turn failed'))
          .finally(() => {
            this.busy -= 1;
            this.lastActivityAt = this.deps.now();
          });
      }
    }
    // Barge-in: the callee has been speaking min_speech_ms over the agent's audio (a click or a
    // cough is shorter). The detector's own onset is 60 ms of voice; words are shorter than 200 ms.
    if (vad.inSpeech && this.playback && this.deps.turn.interruption.enabled && vad.audioMs - this.speechOnsetMs >= this.deps.turn.interruption.minSpeechMs) this.bargeIn();
    if (this.speechStart === null) this.buffer.trim(this.buffer.total - (PREFIX_MS * RATE) / 1000);
  }

  private dtmf(digit: string): void {
    const at = this.clock();
    this.record({ type: 'turn', now: this.deps.now(), turn: { role: 'callee', text: digit, dtmf: digit, start: at, end: at } });
  }

  private async answer(samples: Int16Array, startedAt: number, endedAt: number): Promise<void> {
    if (this.hungUp || this.disposed) return;
    const text = (await this.deps.recognise(samples, this.abort.signal)).trim();
    if (!text) return;
    const ignored = this.deps.turn.interruption.ignore.includes(text.toLowerCase().replace(/[.!?,]/g, ''));
    this.record({ type: 'turn', now: this.deps.now(), turn: { role: 'callee', text, start: this.clock(startedAt), end: this.clock(endedAt) } });
    // A backchannel while the agent speaks is not a turn ("haan", "ok"); once the credit guard is
    // closing the call, nothing is answered (an action whose confirmation cannot play is not taken).
    if ((ignored && this.playback) || this.closing) return;
    const reply = await this.deps.agent.reply(text);
    if (!reply || this.hungUp || this.closing) return;
    if (reply.outcome && reply.action) this.record({ type: 'action', now: this.deps.now(), action: { action: reply.action, intent: reply.intent, entities: reply.entities, at: this.clock() } });
    await this.say(reply, endedAt);
  }

  // ---- speaking ----

  /** Plays a reply; once the credit guard is closing the call, only its own last words (`last`). */
  private async say(reply: AgentReply, heardAt: number | null, last = false): Promise<void> {
    if (this.hungUp || this.disposed || !this.stream || (this.closing && !last)) return;
    const abort = new AbortController();
    const p: Playback = { startedAt: this.deps.now(), marks: new Map(), heardBytes: 0, abort, done: Promise.resolve() };
    this.playback = p;
    this.agentTurns += 1;
    const turn = this.agentTurns;
    let firstFrameAt: number | null = null;
    const audio = reply.audio;
    p.done = new Promise<void>((resolve) => {
      // Paced by the instance's one clock (src/voice/pacer.ts): frame n leaves at n × 20 ms, 40 ms ahead.
      const started = performance.now();
      const frames = Math.ceil(audio.length / FRAME_BYTES);
      let frame = 0;
      let sent = 0;
      const step = (now: number): boolean => {
        try {
          return sendDue(now);
        } catch (err) {
          this.deps.log.warn({ err }, 'playback failed');
          abort.abort(); // the reply ends here; the call goes on
          return false;
        }
      };
      const sendDue = (now: number): boolean => {
        if (abort.signal.aborted || !this.stream) return false;
        const due = Math.min(frames, Math.floor((now - started + LEAD_MS) / FRAME_MS) + 1);
        for (; frame < due; frame++) {
          const chunk = audio.subarray(frame * FRAME_BYTES, (frame + 1) * FRAME_BYTES);
          this.stream.send({ event: 'media', streamSid: this.streamSid, media: { payload: chunk.toString('base64') } });
          firstFrameAt ??= this.deps.now();
          sent += chunk.length;
          if ((frame + 1) % FRAMES_PER_MARK === 0 || sent >= audio.length) {
            const name = `t${turn}-${++this.markSeq}`;
            p.marks.set(name, sent);
            this.stream.send({ event: 'mark', streamSid: this.streamSid, mark: { name } });
          }
        }
        return frame < frames;
      };
      const played = () => {
        // Played once the last mark comes back (or cut by a barge-in, or the call over, meanwhile).
        if (abort.signal.aborted || p.heardBytes >= audio.length || this.hungUp || this.disposed) {
          abort.signal.removeEventListener('abort', onAbort);
          resolve();
          return true;
        }
        return false;
      };
      const onAbort = () => {
        this.deps.pacer.remove(step);
        played();
      };
      abort.signal.addEventListener('abort', onAbort, { once: true });
      p.checkPlayed = played;
      this.deps.pacer.add(step);
      if (audio.length === 0) played();
    });
    await p.done;
    this.lastActivityAt = this.deps.now();
    const interrupted = abort.signal.aborted && !this.hungUp && !this.disposed;
    if (this.playback === p) this.playback = null;
    const heard = Math.min(1, p.heardBytes / Math.max(1, audio.length));
    const t: Turn = {
      role: 'agent',
      text: reply.text,
      heard_text: interrupted ? heardText(reply.text, heard) : reply.text,
      interrupted,
      start: this.clock(firstFrameAt ?? p.startedAt),
      end: this.clock(),
      ...(reply.responseId ? { response_id: reply.responseId } : {}),
      ...(reply.intent !== null ? { intent: reply.intent } : {}),
      ...(Object.keys(reply.entities).length > 0 ? { entities: reply.entities } : {}),
    };
    this.record({
      type: 'turn',
      now: this.deps.now(),
      turn: t,
      interrupted: interrupted && !this.closing, // the callee's interruptions, not the credit guard's cut
      ...(heardAt !== null && firstFrameAt !== null ? { latencyMs: Math.max(0, firstFrameAt - heardAt) } : {}),
      ...(reply.nextState ? { agentState: reply.nextState } : {}),
    });
    if (reply.hangup && !interrupted) await this.end('agent_hangup');
  }

  private marked(name: string): void {
    const p = this.playback;
    if (!p || p.abort.signal.aborted) return; // marks echoed for audio a clear dropped say nothing
    const bytes = p.marks.get(name);
    if (bytes !== undefined && bytes > p.heardBytes) p.heardBytes = bytes;
    p.checkPlayed?.();
  }

  private bargeIn(): void {
    if (this.closing) return; // the credit guard's last words are not cut
    const heard = this.cutPlayback();
    if (heard !== null) this.deps.log.debug({ heard_bytes: heard }, 'barge-in: playback cleared');
  }

  /** Stops the reply playing and tells the carrier to drop what it queued; the bytes heard, or null when nothing played. */
  private cutPlayback(): number | null {
    const p = this.playback;
    if (!p || p.abort.signal.aborted) return null;
    p.abort.abort();
    this.stream?.send({ event: 'clear', streamSid: this.streamSid });
    return p.heardBytes;
  }

  private stopPlayback(): void {
    this.playback?.abort.abort();
  }
}

/** The words of `text` the callee heard when `fraction` of its audio played (cut at a word). */
export function heardText(text: string, fraction: number): string {
  if (fraction >= 1) return text;
  const words = text.split(/\s+/).filter(Boolean);
  return words.slice(0, Math.floor(words.length * fraction)).join(' ');
}
