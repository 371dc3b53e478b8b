// One call's live side: the call actor's in-memory resources, never persisted. It dials through the
// carrier and turns the carrier's news into the actor's events; once the carrier's media stream is
// attached (src/ws/voice.ts, after the `start` frame carried the call's token) it runs the media loop:
//   carrier frames → decoded to 8 kHz PCM → VAD (the realtime path's detector) → an utterance per
//   speech → the call's stt model → the agent → its reply's pre-rendered audio → chunks paced in
//   real time with a `mark` every 200 ms → the carrier (the reply's side: src/voice/playback.ts).
// The carrier's protocol is its `wire` (src/voice/wire/): how its frames read, which audio its
// stream carries and in what chunks (Twilio: μ-law, 20 ms; Exotel: PCM16, 100 ms); the loop is the same.
// A reply's audio may grow while it plays (an LLM's sentences, each synthesized as it completes):
// the playback sends what it has and waits for the next line. Endpointing: `endpointing_ms.min` of
// silence ends the callee's turn, `max` when digits are expected (the agent's reply asked for an
// amount or a phone number, or the callee keyed DTMF since the agent last spoke).
// Barge-in: callee speech (the detector's `min_speech_ms`) while the agent plays stops the playback
// between two frames, cancels what the reply still had coming (its chat stream, its syntheses) and
// sends the carrier's `clear` at once; the marks echoed before it tell how much the callee heard,
// and the agent's turn keeps `heard_text`: its text cut there.
// The credit guard (a call whose maximum the wallet set): the agent's low-balance wording, timed from
// the actor's answer to end before that limit in the carrier's chunks, cuts the agent's turn and plays
// whole (no barge-in, nothing answered meanwhile); then the call ends `insufficient_credit`.
// The actor gets control events only (turns, actions, a heartbeat a second, an end it decided);
// audio never enters it.
import type { Logger } from 'pino';
import type { DialInput, EndReason, Turn, VoiceCallEvent } from '../../machines/voice-call.machine.ts';
import type { VoiceDetector, VoiceDetectors } from '../speech/vad.ts';
import { AudioBuffer } from '../speech/audio-buffer.ts';
import type { AgentReply, CallAgent } from './agent.ts';
import type { SpokenLine } from './lines.ts';
import { sameSecret, type Carrier, type DialRequest } from '../providers/carrier.ts';
import type { MediaWire } from '../providers/carrier-wire/types.ts';
import { twilioWire } from '../providers/carrier-wire/twilio.ts';
import type { CallResources } from './kind.ts';
import type { Pacer } from './pacer.ts';
import { Playback, wholeChunks } from './playback.ts';

const RATE = 8000;
const HEARTBEAT_MS = 1000;
const PREFIX_MS = 300;
const MAX_UTTERANCE_MS = 30_000;
/** The credit guard's wording ends this long before the call's limit (timers, the last mark's echo, the end's write). */
const CREDIT_MARGIN_MS = 1000;

/** What the media loop sends the carrier and how it closes the stream (the WebSocket edge's side). */
export interface MediaStream {
  send(frame: Record<string, unknown>): void;
  close(code: number, reason: string): void;
}

interface TurnSettings {
  /** Silence that ends the callee's utterance: `min` normally, `max` while digits are expected. */
  endpointingMs: { min: number; max: number };
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

export class CallMedia implements CallResources {
  private carrierCallId: string | null = null;
  private carrier: Carrier | null = null;
  private answeredAt: number | null = null;
  private carrierEnded = false;
  private stream: MediaStream | null = null;
  private streamSid: string | null = null;
  /** The protocol of the carrier dialling (then of the one that took the call). */
  private wire: MediaWire;
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
  /** The agent's turn in progress (its reply being made or played): the hang-up aborts it. */
  private turnAbort: AbortController | null = null;
  /** The agent's last reply asked for digits; the callee keyed DTMF since: the turn waits `endpointing_ms.max`. */
  private digitsAsked = false;
  private digitsKeyed = false;
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

  constructor(private readonly deps: CallMediaDeps) {
    this.wire = (deps.carriers[0]?.carrier.wire ?? twilioWire).gateway;
  }

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
      this.wire = carrier.wire.gateway; // its stream may open before its dial answers
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
   * One frame from a stream socket, parsed as JSON (read by the carrier's wire): the socket becomes
   * the call's with a `start` frame carrying its token; before that (or from another socket) its
   * frames are refused. Returns why a frame is refused, or null.
   */
  frame(stream: MediaStream, m: Record<string, unknown>): string | null {
    const f = this.wire.parse(m);
    if (f.event === 'connected') return null;
    if (f.event === 'start') {
      if (this.started || this.hungUp || this.disposed) return 'the stream has started already';
      if (f.token === null || !sameSecret(f.token, this.deps.token)) return 'bad token';
      this.started = true;
      this.lastActivityAt = this.deps.now();
      this.stream = stream;
      this.lastFrameAt = this.deps.now();
      this.streamSid = f.streamSid;
      void this.begin().catch((err: unknown) => {
        this.deps.log.error({ err }, 'the media loop could not start');
        void this.end('media_timeout');
      });
      return null;
    }
    if (stream !== this.stream) return 'no start frame yet';
    this.lastFrameAt = this.deps.now();
    switch (f.event) {
      case 'media':
        this.audio(f.samples);
        return null;
      case 'mark':
        this.marked(f.name);
        return null;
      case 'dtmf':
        this.dtmf(f.digit);
        return null;
      case 'stop':
        void this.end('callee_hangup');
        return null;
      case 'refused':
        return f.why;
    }
  }

  private async begin(): Promise<void> {
    const detectors = await this.deps.detectors();
    if (this.hungUp || this.disposed) return;
    this.vad = detectors.create({ sampleRate: RATE, silence_duration_ms: this.deps.turn.endpointingMs.min, prefix_padding_ms: PREFIX_MS });
    this.heartbeat = setInterval(() => void this.deps.actor.send({ type: 'media.heartbeat', now: this.deps.now() }, { wait: 'applied' }).catch(() => undefined), HEARTBEAT_MS);
    this.heartbeat.unref();
    this.queue = this.queue.then(() =>
      this.respond(
        () =>
          this.deps.agent.opening().catch((err: unknown) => {
            this.deps.log.warn({ err }, 'the agent could not open');
            return null;
          }),
        null,
      ),
    );
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
      .then(() => this.respond(() => this.deps.agent.prompt(), null))
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
    // Its lines, rendered: how long they play in the carrier's chunks.
    let words: AgentReply | null;
    const lines: SpokenLine[] = [];
    try {
      words = await this.deps.agent.lowBalance();
      if (words) for await (const line of words.lines) lines.push(line);
    } catch (err) {
      this.deps.log.warn({ err }, 'the low-balance wording could not be rendered');
      return;
    }
    if (!words || this.hungUp || this.disposed) return;
    const wire = this.wire;
    const playMs = lines.reduce((ms, line) => ms + (wholeChunks(line.audio, wire).length / wire.chunkBytes) * wire.chunkMs, 0);
    const reply: AgentReply = { ...words, lines: replay(lines) };
    this.creditGuard = setTimeout(() => void this.closeForCredit(reply), Math.max(0, deadline - CREDIT_MARGIN_MS - playMs - this.deps.now()));
    this.creditGuard.unref();
  }

  /** The credit guard's close: the agent's turn stops (cleared at the carrier if it played), the wording plays, the call ends. */
  private async closeForCredit(words: AgentReply): Promise<void> {
    this.closing = true;
    this.cutPlayback();
    this.stopPlayback();
    await this.respond(async () => words, null, true).catch((err: unknown) => this.deps.log.warn({ err }, 'the low-balance wording did not play'));
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

  private audio(samples: Int16Array): void {
    const vad = this.vad;
    if (!vad) return;
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
    this.digitsKeyed = true;
    this.endpoint();
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
    await this.respond((signal) => this.deps.agent.reply(text, signal), endedAt);
  }

  /** The silence that ends the callee's turn, as the conversation stands (see `digitsAsked`). */
  private endpoint(): void {
    const { min, max } = this.deps.turn.endpointingMs;
    this.vad?.setSilence(this.digitsAsked || this.digitsKeyed ? max : min);
  }

  // ---- speaking ----

  /**
   * One agent turn: its reply (`make`), recorded and said. The turn's signal goes to the agent and
   * is aborted by a barge-in, the credit guard or the hang-up, and at the turn's end: what the reply
   * still had running (an LLM's stream, its syntheses) stops there. Once the credit guard is closing
   * the call, only its own last words (`last`) are said.
   */
  private async respond(make: (signal: AbortSignal) => Promise<AgentReply | null>, heardAt: number | null, last = false): Promise<void> {
    const abort = new AbortController();
    this.turnAbort = abort;
    try {
      const reply = await make(abort.signal);
      if (!reply || this.hungUp || this.disposed || abort.signal.aborted || (this.closing && !last)) return;
      if (reply.outcome && reply.action) this.record({ type: 'action', now: this.deps.now(), action: { action: reply.action, intent: reply.intent, entities: reply.outcome, at: this.clock() } });
      await this.say(reply, heardAt, abort);
    } finally {
      abort.abort();
      if (this.turnAbort === abort) this.turnAbort = null;
    }
  }

  /**
   * Plays a reply as its lines come, then records the agent's turn: its text (every line), what the
   * callee heard of it, and the latency from `heardAt` (the end of the callee's turn) to its first frame.
   */
  private async say(reply: AgentReply, heardAt: number | null, abort: AbortController): Promise<void> {
    if (this.hungUp || this.disposed || !this.stream) return;
    const turn = (this.agentTurns += 1);
    const p = new Playback(
      {
        wire: this.wire,
        pacer: this.deps.pacer,
        now: () => this.deps.now(),
        log: this.deps.log,
        outlet: () => (this.stream ? { send: (frame) => this.stream?.send(frame), sid: this.streamSid } : null),
        over: () => this.hungUp || this.disposed,
        markName: () => `t${turn}-${++this.markSeq}`,
      },
      abort,
    );
    this.playback = p;
    // The callee's answer to this reply: digits may come with pauses between them.
    this.digitsAsked = reply.expectsDigits;
    this.digitsKeyed = false;
    this.endpoint();
    const played = p.play();
    try {
      for await (const line of reply.lines) {
        if (abort.signal.aborted) break;
        p.append(line.text, line.audio);
      }
    } catch (err) {
      if (!abort.signal.aborted) this.deps.log.warn({ err }, 'the reply stopped short');
    } finally {
      p.finish();
    }
    await played;
    this.lastActivityAt = this.deps.now();
    if (this.playback === p) this.playback = null;
    if (!p.said) return; // nothing was said
    const interrupted = abort.signal.aborted && !this.hungUp && !this.disposed;
    const text = p.text;
    const t: Turn = {
      role: 'agent',
      text,
      heard_text: interrupted ? p.heardText : text,
      interrupted,
      start: this.clock(p.firstFrameAt ?? p.startedAt),
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
      ...(heardAt !== null && p.firstFrameAt !== null ? { latencyMs: Math.max(0, p.firstFrameAt - heardAt) } : {}),
      ...(reply.nextState ? { agentState: reply.nextState } : {}),
    });
    if (reply.hangup && !interrupted) await this.end('agent_hangup');
  }

  private marked(name: string): void {
    this.playback?.marked(name);
  }

  private bargeIn(): void {
    if (this.closing) return; // the credit guard's last words are not cut
    const heard = this.cutPlayback();
    if (heard !== null) this.deps.log.debug({ heard_bytes: heard }, 'barge-in: playback cleared');
  }

  /** Stops the reply playing and tells the carrier to drop what it queued; the bytes heard, or null when nothing played. */
  private cutPlayback(): number | null {
    return this.playback?.cut() ?? null;
  }

  /** The agent's turn ends: its playback and whatever of its reply is still coming. */
  private stopPlayback(): void {
    this.turnAbort?.abort();
  }
}

/** Lines already rendered, as a reply's. */
async function* replay(lines: SpokenLine[]): AsyncGenerator<SpokenLine> {
  yield* lines;
}
