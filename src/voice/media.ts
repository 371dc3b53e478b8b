// One call's live side: the call actor's in-memory resources, never persisted. It dials through the
// carrier and turns the carrier's news into the actor's events; once the carrier's media stream is
// attached (src/ws/voice.ts, after the `start` frame carried the call's token) it runs the media loop:
//   carrier frames → decoded to 8 kHz PCM → VAD (the listening stage the realtime path uses too) → an
//   utterance per speech → the call's stt model → the agent → its reply's pre-rendered audio → chunks
//   paced in real time with a `mark` every 200 ms → the carrier (the reply's side: src/voice/playback.ts).
// This file composes single-job pieces sharing one `CallLine` (src/voice/call-line.ts): dialling
// (src/voice/dialling.ts, with the carrier failover rule), listening (src/voice/listening.ts:
// utterances, DTMF, endpointing, barge-in), speaking (src/voice/speaking.ts: the agent's turns) and
// the timers (src/voice/timers.ts: media and silence watchdogs, heartbeat, credit guard).
// The carrier's protocol is its `wire` (src/providers/carrier-wire/): how its frames read, which audio its
// stream carries and in what chunks (Twilio: μ-law, 20 ms; Exotel: PCM16, 100 ms); the loop is the same.
// A stream whose `start` declares another format (Exotel's media_format: 16 or 24 kHz, μ-law) gets its
// own wire from it (`forFormat`: resampled to 8 kHz in, to its rate out); one the gateway cannot take
// is closed and the call ends `media_format_unsupported`.
// A reply's audio may grow while it plays (an LLM's sentences, each synthesized as it completes):
// the playback sends what it has and waits for the next line.
// Barge-in: callee speech heard (`min_speech_ms` of voice, src/voice/listening.ts) while the agent plays stops the playback
// between two frames, cancels what the reply still had coming (its chat stream, its syntheses) and
// sends the carrier's `clear` at once; the marks echoed before it tell how much the callee heard,
// and the agent's turn keeps `heard_text`: its text cut there.
// The agent and the recogniser (`converse`) are built once, when the call is answered: a call that is
// never answered builds neither. The carrier's news of the answer (a status callback) may come late,
// twice, out of order or never; the carriers open the media stream only once the callee answered, so
// the stream's authenticated `start` is proof of the answer too: when it comes first, it answers the
// call (the actor's `carrier.answered`, at the start's time), and the callback is then news the
// actor no longer takes. Billing and the transcript's clock count from the actor's answer.
// The actor gets control events only (turns, actions, a heartbeat a second, an end it decided);
// audio never enters it.
import type { Logger } from 'pino';
import type { DialInput, EndReason } from '../../machines/voice-call.machine.ts';
import type { VoiceDetectors } from '../speech/vad.ts';
import type { Resamplers } from '../speech/resample.ts';
import type { MediaWire, StreamFormat } from '../providers/carrier-wire/types.ts';
import { sameSecret, type Carrier } from '../providers/carrier.ts';
import { CallLine, type CallActor, type Conversation, type MediaStream } from './call-line.ts';
import { Dialling } from './dialling.ts';
import type { CallResources } from './kind.ts';
import { CallListening, type TurnSettings } from './listening.ts';
import type { Pacer } from './pacer.ts';
import { Speaking } from './speaking.ts';
import { CallTimers } from './timers.ts';
import type { VoiceMetrics } from './turn-stages.ts';
import { handOff } from './transfer.ts';
import { keysReply } from './dtmf.ts';
import type { AgentReply } from './agent.ts';
import type { CallRecorder } from './recorder.ts';
import { CallVoicemail, type CallVoicemailDeps } from './voicemail.ts';
import type { AnsweredByNews } from '../../machines/voice-call.machine.ts';

export type { MediaStream } from './call-line.ts';

/** How long a hung-up call waits for the callee's last words to be recognised before it ends. */
const LAST_WORDS_MS = 10_000;
/**
 * How long a call whose callee hung up waits, after the last words, for the carrier's own news of the
 * end (a carrier that reports by status callback posts it right after its `stop`): ended on that
 * news, the call is billed no more than the seconds the carrier counted. Without it, the call ends
 * at the hang-up as heard here.
 */
const CARRIER_NEWS_MS = 2_000;

export interface CallMediaDeps {
  callId: string;
  /** The model's usable carrier routes, in order: a dial that one refuses goes to the next (before any answer). */
  carriers: { route: number; carrier: Carrier }[];
  /** The call's actor (the runtime's ref). */
  actor: CallActor;
  streamUrl: string;
  /** The one-time token the stream's `start` frame must carry. */
  token: string;
  /** Builds the call's agent and recogniser; called once, at the answer. `clock`: seconds from the answer. */
  converse(clock: (at: number) => number): Conversation;
  detectors(): Promise<VoiceDetectors>;
  /** For a stream at another rate than 8 kHz (Exotel's `?sample-rate=`): its audio resampled both ways. */
  resamplers(): Promise<Resamplers>;
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
  /** A transfer of the call is asked of a carrier that asks back after it: keep it (src/voice/handoffs.ts). */
  onHandoff?(carrierCallId: string, to: string, from: string | null): Promise<void>;
  /** The instance's playback clock (one timer for every call). */
  pacer: Pacer;
  /** Each turn's stages and latency (src/voice/turn-stages.ts). */
  metrics?: VoiceMetrics;
  /** The hand-off line said before an API transfer (src/voice/transfer.ts); none: nothing is said first. */
  handoffWords?(): Promise<AgentReply | null>;
  /** Where the pack's escalation to a person transfers the call (the call's `transfer_to`); none: it hangs up. */
  transferTo?: string;
  /** The call's recording (src/voice/recorder.ts), started with the stream; and its spoken notice, said before the opening. */
  recorder?: CallRecorder | null;
  notice?: (() => Promise<AgentReply | null>) | null;
  /** The call's answering machines (src/voice/voicemail.ts): its `voicemail` and the message it leaves. */
  voicemail?: Pick<CallVoicemailDeps, 'plan' | 'message'>;
}

export class CallMedia implements CallResources {
  private readonly line: CallLine;
  private readonly dialling: Dialling;
  private readonly speaking: Speaking;
  private readonly listening: CallListening;
  private readonly timers: CallTimers;
  private readonly voicemail: CallVoicemail;
  private conversation: Conversation | null = null;
  /** The carrier took a transfer: its stream's end is the hand-off, not the callee hanging up. */
  private handedOff = false;
  /** Resolves when the actor ended the call here (its hang-up) or the live side went away. */
  private readonly over: Promise<void>;
  private markOver!: () => void;

  constructor(private readonly deps: CallMediaDeps) {
    const { log, now, actor } = deps;
    this.over = new Promise<void>((resolve) => (this.markOver = resolve));
    this.line = new CallLine({ actor, log, now, stopTimers: () => this.timers.stop() });
    const line = this.line;
    this.dialling = new Dialling({ ...deps, machineDetection: (deps.voicemail?.plan ?? null) !== null, onAnswered: (at) => this.answer(at) });
    const wire = () => this.dialling.wire;
    const escalate = deps.transferTo;
    this.speaking = new Speaking({
      line,
      wire,
      pacer: deps.pacer,
      log,
      now,
      endpoint: () => this.listening.endpoint(),
      metrics: deps.metrics,
      // The pack's escalation to a person, on a call given `transfer_to`: a transfer, not a hang-up.
      ...(escalate
        ? {
            escalate: async () =>
              this.dialling.canTransfer && (await actor.send({ type: 'agent.transfer', now: now(), to: escalate }, { wait: 'durable' }).then(() => true)),
          }
        : {}),
    });
    this.listening = new CallListening({ line, speaking: this.speaking, turn: deps.turn, log, now, talk: () => this.talk() });
    this.voicemail = new CallVoicemail({ plan: null, message: async () => null, ...deps.voicemail, line, speaking: this.speaking, log, now });
    this.timers = new CallTimers({
      line,
      speaking: this.speaking,
      actor,
      listening: () => this.listening.speaking,
      talk: () => this.talk(),
      wire,
      mediaTimeoutMs: deps.mediaTimeoutMs,
      idle: deps.idle,
      log,
      now,
    });
  }

  // ---- the actor's effects (CallResources) ----

  dial(input: DialInput): Promise<string> {
    return this.dialling.dial(input);
  }

  answered(at: number): void {
    // The simulator told the answer already, or the stream's start did; a carrier's callback did not.
    this.answer(at);
    // The actor's answer is the call's clock (what billing counts from): at or before the stream's start.
    this.line.answeredAt = at;
    if (this.deps.creditLimitMs !== null && !this.line.over) this.timers.guardCredit(at + this.deps.creditLimitMs);
  }

  answeredBy(news: AnsweredByNews): void {
    this.voicemail.answeredBy(news);
  }

  async hangup(reason: EndReason): Promise<void> {
    if (this.line.hungUp) return;
    this.line.hungUp = true;
    this.markOver();
    this.speaking.stop();
    this.timers.stop();
    this.line.stream?.close(1000, 'call ended'); // an Exotel flow moves on to its Connect applet
    if (reason !== 'transferred') await this.dialling.hangup();
  }

  /** Keys the agent sends (src/voice/dtmf.ts), as tones after what it is saying; false: the line is not up to take them. */
  sendKeys(digits: string): boolean {
    const line = this.line;
    if (line.over || line.closing || line.goneAt !== null || !line.stream) return false;
    line.enqueue(() => this.speaking.respond(async () => keysReply(digits), null), 'the keys did not play');
    return true;
  }

  /** Whether the call's carrier can transfer it (src/voice/transfer.ts). */
  get canTransfer(): boolean {
    return this.dialling.canTransfer;
  }

  /** A cold transfer (src/voice/transfer.ts): the hand-off line, then the carrier bridges; resolves with when it took it. */
  transfer(to: string, by: 'api' | 'agent', asking?: (at: number) => Promise<unknown>): Promise<number> {
    const { log, now } = this.deps;
    return handOff(
      {
        line: this.line,
        speaking: this.speaking,
        words: () => this.deps.handoffWords?.() ?? Promise.resolve(null),
        stopTimers: () => this.timers.stop(),
        ...(asking ? { asking } : {}),
        bridge: async (number) => {
          this.handedOff = true;
          await this.dialling.transfer(number).catch((err: unknown) => {
            this.handedOff = false;
            this.line.closing = false;
            throw err;
          });
        },
        log,
        now,
      },
      to,
      by,
    );
  }

  dispose(): void {
    if (this.line.disposed) return;
    this.line.disposed = true;
    this.markOver();
    this.line.abort.abort();
    this.speaking.stop();
    this.timers.stop();
    this.listening.close();
    this.voicemail.close();
    this.dialling.wire.close?.();
    if (!this.line.hungUp) this.dialling.drop();
    this.line.stream?.close(1001, 'going away');
    this.deps.onDisposed();
  }

  // ---- the carrier's media stream (src/ws/voice.ts) ----

  /** The carrier's id for the call, once a carrier took it (an Exotel flow asking for its stream names it). */
  get carrierCall(): string | null {
    return this.dialling.carrierCall;
  }

  /** A stream socket closed: when it was the call's, the callee's line is gone. */
  detached(stream: MediaStream): void {
    if (stream !== this.line.stream || this.line.over) return;
    this.line.stream = null;
    void this.calleeHungUp();
  }

  /**
   * One frame from a stream socket, parsed as JSON (read by the carrier's wire): the socket becomes
   * the call's with a `start` frame carrying its token; before that (or from another socket) its
   * frames are refused. Returns why a frame is refused, or null.
   */
  frame(stream: MediaStream, m: Record<string, unknown>): string | null {
    const line = this.line;
    const f = this.dialling.wire.parse(m);
    if (f.event === 'connected') return null;
    if (f.event === 'start') {
      if (line.started || line.over) return 'the stream has started already';
      if (f.token === null || !sameSecret(f.token, this.deps.token)) return 'bad token';
      if (f.format && 'unsupported' in f.format) return this.unsupported(stream, f.format.unsupported);
      const at = this.deps.now();
      line.started = true;
      line.lastActivityAt = at;
      line.stream = stream;
      line.streamSid = f.streamSid;
      // Proof of the answer: the carrier opens the stream only once the callee answered. Told the
      // actor before any turn (its events apply in order), so the greeting counts from here.
      if (line.answeredAt === null) {
        this.answer(at);
        line.record({ type: 'carrier.answered', now: at });
      }
      this.timers.lastFrameAt = at;
      this.deps.recorder?.begin(line.answeredAt ?? at);
      line.tap = this.deps.recorder ?? null;
      void this.begin(f.format).catch((err: unknown) => {
        this.deps.log.error({ err }, 'the media loop could not start');
        void line.end('media_timeout');
      });
      return null;
    }
    if (stream !== line.stream) return 'no start frame yet';
    this.timers.lastFrameAt = this.deps.now();
    switch (f.event) {
      case 'media':
        line.tap?.heard(f.samples);
        this.listening.audio(f.samples);
        this.voicemail.audio(f.samples);
        return null;
      case 'mark':
        this.speaking.marked(f.name);
        return null;
      case 'dtmf':
        this.listening.dtmf(f.digit);
        return null;
      case 'stop':
        void this.calleeHungUp();
        return null;
      case 'refused':
        return f.why;
    }
  }

  /**
   * The callee hung up (the carrier's `stop`, or the stream closed): nothing more is said, and what
   * they were saying is recognised and recorded as their last turn (with the turns still being
   * recognised) before the call ends, at the hang-up: people say their last sentence and hang up
   * at once, and it is often the one that matters. Waits at most LAST_WORDS_MS for it, then (a
   * carrier that reports by callback) at most CARRIER_NEWS_MS for the carrier's news of the end.
   */
  private async calleeHungUp(): Promise<void> {
    const line = this.line;
    if (line.over || line.goneAt !== null || this.handedOff) return;
    line.goneAt = this.deps.now();
    this.timers.stop();
    this.speaking.stop();
    this.listening.flush();
    await within(line.queue, LAST_WORDS_MS);
    if (this.dialling.reportsByCallback) await within(this.over, CARRIER_NEWS_MS);
    await line.end('callee_hangup', line.goneAt);
  }

  /** The answer (the carrier's news, the stream's start or the actor's), once: the media watchdog is armed, the conversation built. */
  private answer(at: number): void {
    if (this.line.answeredAt !== null) return;
    this.line.answeredAt = at;
    this.timers.arm(); // the stream must start within the media timeout
    this.talk();
  }

  /** The call's agent and recogniser, built once (at the answer; at the stream's start if that came first). */
  private talk(): Conversation {
    return (this.conversation ??= this.deps.converse((at) => this.line.clock(at)));
  }

  /**
   * A stream in a format the gateway cannot take (its `start`'s media_format): refused by name and
   * the call ended `media_format_unsupported`, rather than its audio misread as 8 kHz PCM16.
   */
  private unsupported(stream: MediaStream, format: string): null {
    this.line.started = true;
    this.deps.log.warn({ media_format: format }, 'stream refused: unsupported media_format');
    stream.close(1003, `unsupported media_format: ${format}`.slice(0, 120));
    void this.line.end('media_format_unsupported');
    return null;
  }

  /** The wire of the stream as its `start` declared it (a 16 kHz Exotel stream: resampled both ways). */
  private async streamWire(format: StreamFormat | undefined): Promise<MediaWire> {
    const wire = this.dialling.wire;
    if (!format || 'unsupported' in format || !wire.forFormat) return wire;
    if (format.rate === 8000 && format.encoding === wire.audio) return wire; // the carrier's own (8 kHz): nothing to resample
    return wire.forFormat(format, await this.deps.resamplers());
  }

  private async begin(format?: StreamFormat): Promise<void> {
    const [detectors, wire] = await Promise.all([this.deps.detectors(), this.streamWire(format)]);
    if (this.line.disposed && wire !== this.dialling.wire)
      wire.close?.(); // its resampler, never used
    else this.dialling.wire = wire; // before the first audio is listened to
    if (this.line.over) return;
    this.listening.start(detectors);
    this.voicemail.start(detectors, this.dialling.detectsMachines);
    this.timers.beat();
    const agent = this.talk().agent;
    const notice = this.deps.notice;
    if (notice) this.line.queue = this.line.queue.then(() => this.speaking.respond(() => notice().catch(() => null), null));
    this.line.queue = this.line.queue.then(() =>
      this.speaking.respond(
        () =>
          agent.opening().catch((err: unknown) => {
            this.deps.log.warn({ err }, 'the agent could not open');
            return null;
          }),
        null,
      ),
    );
  }
}

/** Waits for `done`, at most `ms`. */
async function within(done: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([done, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
