// A call's timers: the media watchdog (no stream start, or no frame, for `mediaTimeoutMs` ends the
// call), the silence watchdog (nobody spoke for a while: the agent prompts, then the call ends), the
// heartbeat the actor gets every second, and the credit guard (a call whose maximum the wallet set):
// the agent's low-balance wording, timed from the actor's answer to end before that limit in the
// carrier's chunks, cuts the agent's turn and plays whole (no barge-in, nothing answered meanwhile);
// then the call ends `insufficient_credit`.
import type { Logger } from 'pino';
import type { AgentReply } from './agent.ts';
import type { CallActor, CallLine, Conversation } from './call-line.ts';
import type { SpokenLine } from './lines.ts';
import { wholeChunks } from './playback.ts';
import type { Speaking } from './speaking.ts';
import type { MediaWire } from '../providers/carrier-wire/types.ts';

const HEARTBEAT_MS = 1000;
/** The credit guard's wording ends this long before the call's limit (timers, the last mark's echo, the end's write). */
const CREDIT_MARGIN_MS = 1000;

export interface CallTimersDeps {
  line: CallLine;
  speaking: Speaking;
  actor: CallActor;
  /** The callee is speaking (the silence watchdog waits). */
  listening(): boolean;
  /** The call's agent (its idle prompt, its low-balance wording) and recogniser, built at the answer. */
  talk(): Conversation;
  /** The protocol of the carrier that took the call (its chunks time the low-balance wording). */
  wire(): MediaWire;
  mediaTimeoutMs: number;
  /** The silence watchdog: prompt after this long without speech, at most this many times, then end. */
  idle: { promptAfterMs: number; maxPrompts: number };
  log: Logger;
  now(): number;
}

export class CallTimers {
  /** When the carrier's stream last sent a frame (or the watchdog was armed). */
  lastFrameAt = 0;
  private watchdog: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private creditGuard: NodeJS.Timeout | null = null;
  private creditGuardArmed = false;

  constructor(private readonly deps: CallTimersDeps) {}

  /** Arms the media watchdog: no stream start (or no frame) for mediaTimeoutMs ends the call. */
  arm(): void {
    this.lastFrameAt = this.deps.now();
    this.watchdog = setInterval(
      () => {
        if (this.deps.now() - this.lastFrameAt >= this.deps.mediaTimeoutMs) void this.deps.line.end('media_timeout');
        else this.checkIdle();
      },
      Math.min(250, this.deps.mediaTimeoutMs),
    );
    this.watchdog.unref();
  }

  /** The stream started: the actor's heartbeat, a second apart. */
  beat(): void {
    this.heartbeat = setInterval(
      () => void this.deps.actor.send({ type: 'media.heartbeat', now: this.deps.now() }, { wait: 'applied' }).catch(() => undefined),
      HEARTBEAT_MS,
    );
    this.heartbeat.unref();
  }

  /** Arms the credit guard once, for a call that must end by `deadline`. */
  guardCredit(deadline: number): void {
    if (this.creditGuardArmed) return;
    this.creditGuardArmed = true;
    void this.armCreditGuard(deadline);
  }

  stop(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.creditGuard) clearTimeout(this.creditGuard);
    this.watchdog = this.heartbeat = this.creditGuard = null;
  }

  /**
   * The silence watchdog: nobody has spoken for `idle.promptAfterMs` (the agent silent, the callee
   * too, no turn in hand): the agent prompts, up to `maxPrompts` times; silence after the last one
   * ends the call (`silence_timeout`). Independent of the pipeline: a call never stays up unheard.
   */
  private checkIdle(): void {
    const line = this.deps.line;
    if (!line.started || line.closing || this.deps.speaking.playing || this.deps.listening() || line.busy > 0 || line.hungUp) return;
    if (this.deps.now() - line.lastActivityAt < this.deps.idle.promptAfterMs) return;
    line.lastActivityAt = this.deps.now();
    if (line.prompts >= this.deps.idle.maxPrompts) return void line.end('silence_timeout');
    line.prompts += 1;
    line.enqueue(() => this.deps.speaking.respond(() => this.deps.talk().agent.prompt(), null), 'the idle prompt failed');
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
      words = await this.deps.talk().agent.lowBalance();
      if (words) for await (const line of words.lines) lines.push(line);
    } catch (err) {
      this.deps.log.warn({ err }, 'the low-balance wording could not be rendered');
      return;
    }
    if (!words || this.deps.line.over) return;
    const wire = this.deps.wire();
    const playMs = lines.reduce((ms, line) => ms + (wholeChunks(line.audio, wire).length / wire.chunkBytes) * wire.chunkMs, 0);
    const reply: AgentReply = { ...words, lines: replay(lines) };
    this.creditGuard = setTimeout(() => void this.closeForCredit(reply), Math.max(0, deadline - CREDIT_MARGIN_MS - playMs - this.deps.now()));
    this.creditGuard.unref();
  }

  /** The credit guard's close: the agent's turn stops (cleared at the carrier if it played), the wording plays, the call ends. */
  private async closeForCredit(words: AgentReply): Promise<void> {
    this.deps.line.closing = true;
    this.deps.speaking.cut();
    this.deps.speaking.stop();
    await this.deps.speaking
      .respond(async () => words, null, true)
      .catch((err: unknown) => this.deps.log.warn({ err }, 'the low-balance wording did not play'));
    await this.deps.line.end('insufficient_credit');
  }
}

/** Lines already rendered, as a reply's. */
async function* replay(lines: SpokenLine[]): AsyncGenerator<SpokenLine> {
  yield* lines;
}
