// A call's speaking side: one agent turn at a time, its reply made (the agent's), recorded and
// played to the callee (a `Playback`, src/voice/playback.ts: the wire's chunks paced in real time
// with marks), then the agent's turn recorded with what the callee heard of it. A turn's signal
// stops what its reply still had coming (an LLM's stream, its syntheses) when it is cut: a
// barge-in, the credit guard, the hang-up, or its own end. Whether the callee's answer to a reply
// waits for digits (`expectsDigits`, or DTMF keyed since) is kept here for the endpointing.
import type { Logger } from 'pino';
import type { Turn } from '../../machines/voice-call.machine.ts';
import type { AgentReply } from './agent.ts';
import type { CallLine } from './call-line.ts';
import type { Pacer } from './pacer.ts';
import { Playback } from './playback.ts';
import { observeTurn, turnStages, type CalleeTurnTimes, type VoiceMetrics } from './turn-stages.ts';
import type { MediaWire } from '../providers/carrier-wire/types.ts';
import { toolTurn } from './tools.ts';
import { escalatesToPerson } from './transfer.ts';

export interface SpeakingDeps {
  line: CallLine;
  /** The protocol of the carrier that took the call (src/voice/dialling.ts). */
  wire(): MediaWire;
  /** The instance's playback clock (one timer for every call). */
  pacer: Pacer;
  log: Logger;
  now(): number;
  /** The silence that ends the callee's turn changed (digits asked or not): the listening applies it. */
  endpoint(): void;
  /** Each turn's stages and latency, and the answer → the first frame (src/voice/turn-stages.ts). */
  metrics?: VoiceMetrics | undefined;
  /** The agent escalated to a person (src/voice/transfer.ts) on a call that can transfer: the call is transferred, not hung up. */
  escalate?(): Promise<boolean>;
}

export class Speaking {
  private playback: Playback | null = null;
  /** The agent's turn in progress (its reply being made or played): the hang-up aborts it. */
  private turnAbort: AbortController | null = null;
  /** The agent's last reply asked for digits; the callee keyed DTMF since: the turn waits `endpointing_ms.max`. */
  digitsAsked = false;
  digitsKeyed = false;
  private markSeq = 0;
  private agentTurns = 0;
  /** The call's first agent frame was sent (the answer → it is observed once). */
  private firstFrameSeen = false;
  /** The callee barged in during this chain of turns (a reply and what follows it): what follows drops its reply to the answers. */
  private calleeTook = false;
  /** A follow-up's reply is being made (the agent waits for the integrator's answers): the callee's speech takes the turn. */
  private awaiting = false;
  /** The reply to answers the callee spoke over, kept for their next turn (src/voice/agent.ts `stale`). */
  private staleReply: AgentReply['stale'] | null = null;

  constructor(private readonly deps: SpeakingDeps) {}

  /** A reply is playing. */
  get playing(): boolean {
    return this.playback !== null;
  }

  /** The agent waits for the integrator's answers (nothing plays): speech over it is a barge-in. */
  get waiting(): boolean {
    return this.awaiting && this.playback === null;
  }

  /**
   * The reply to answers the callee spoke over, once: the listening says it when their turn is
   * none (a backchannel, nothing recognised), else drops it and answers the turn (decided: the
   * callee's words come after the answer, so the agent answers them with it in context).
   */
  takeStale(): AgentReply['stale'] | null {
    const stale = this.staleReply;
    this.staleReply = null;
    return stale;
  }

  /**
   * One agent turn: its reply (`make`), recorded and said. The turn's signal goes to the agent and
   * is aborted by a barge-in, the credit guard or the hang-up, and at the turn's end: what the reply
   * still had running (an LLM's stream, its syntheses) stops there. Once the credit guard is closing
   * the call, only its own last words (`last`) are said. `heard`: the callee's turn it answers (its
   * times, src/voice/turn-stages.ts), null for the agent's own (the opening, a prompt).
   */
  async respond(make: (signal: AbortSignal) => Promise<AgentReply | null>, heard: CalleeTurnTimes | null, last = false): Promise<void> {
    this.calleeTook = false;
    this.staleReply = null; // a turn of the callee's answered: what they spoke over is old news
    await this.turn(make, heard, last, false);
  }

  /** One reply of a chain (`following`: what followed a reply that sent requests), then what follows it. */
  private async turn(
    make: (signal: AbortSignal) => Promise<AgentReply | null>,
    heard: CalleeTurnTimes | null,
    last: boolean,
    following: boolean,
  ): Promise<void> {
    const line = this.deps.line;
    const abort = new AbortController();
    if (this.calleeTook) abort.abort(); // the callee took the turn: the answers are recorded, their reply left stale
    this.turnAbort = abort;
    let followUp: AgentReply['followUp'];
    let said = false;
    try {
      this.awaiting = following;
      const reply = await make(abort.signal).finally(() => (this.awaiting = false));
      const decided = this.deps.now();
      if (reply?.stale) this.staleReply = reply.stale;
      // What follows the reply (the answers of requests it sent) comes even when it was cut: the agent's history waits for them.
      followUp = reply?.followUp;
      // Requests answered are facts of the call, recorded whatever happens to the reply (a hang-up meanwhile too).
      for (const entry of reply?.tools ?? []) {
        line.record({ type: 'turn', now: this.deps.now(), turn: toolTurn(entry, (at) => line.clock(at)) });
        const { name, status } = entry.exchange;
        line.record({
          type: 'action',
          now: this.deps.now(),
          action: { action: name, intent: entry.intent, entities: entry.entities, at: line.clock(entry.answeredAt), status },
        });
      }
      if (!reply || line.over || abort.signal.aborted || (line.closing && !last)) return;
      if (reply.outcome && reply.action)
        line.record({
          type: 'action',
          now: this.deps.now(),
          action: { action: reply.action, intent: reply.intent, entities: reply.outcome, at: line.clock() },
        });
      said = await this.say(reply, heard, decided, abort);
    } finally {
      abort.abort();
      if (this.turnAbort === abort) this.turnAbort = null;
    }
    // The callee's turn is answered by the first reply that says something (its latency is that reply's).
    if (followUp && !line.over && !(line.closing && !last)) await this.turn(followUp, said ? null : heard, last, true);
  }

  /**
   * Plays a reply as its lines come, then records the agent's turn: its text (every line), what the
   * callee heard of it, and when it answers the callee, its latency from the end of the callee's
   * speech to its first frame, by stage.
   */
  private async say(reply: AgentReply, heard: CalleeTurnTimes | null, decided: number, abort: AbortController): Promise<boolean> {
    const line = this.deps.line;
    if (line.over || !line.stream) return false;
    const turn = (this.agentTurns += 1);
    const p = new Playback(
      {
        wire: this.deps.wire(),
        pacer: this.deps.pacer,
        now: () => this.deps.now(),
        log: this.deps.log,
        outlet: () => (line.stream ? { send: (frame) => line.stream?.send(frame), sid: line.streamSid } : null),
        over: () => line.over,
        markName: () => `t${turn}-${++this.markSeq}`,
        tap: () => line.tap,
      },
      abort,
    );
    this.playback = p;
    // The callee's answer to this reply: digits may come with pauses between them.
    this.digitsAsked = reply.expectsDigits;
    this.digitsKeyed = false;
    this.deps.endpoint();
    const played = p.play();
    let audioAt: number | null = null; // the reply's first audio in hand
    try {
      for await (const spoken of reply.lines) {
        if (abort.signal.aborted) break;
        audioAt ??= this.deps.now();
        p.append(spoken.text, spoken.audio);
      }
    } catch (err) {
      if (!abort.signal.aborted) this.deps.log.warn({ err }, 'the reply stopped short');
    } finally {
      p.finish();
    }
    await played;
    line.lastActivityAt = this.deps.now();
    if (this.playback === p) this.playback = null;
    if (!p.said) return false; // nothing was said
    if (p.firstFrameAt !== null && !this.firstFrameSeen && line.answeredAt !== null) {
      this.firstFrameSeen = true;
      this.deps.metrics?.firstFrame.observe(Math.max(0, p.firstFrameAt - line.answeredAt) / 1000);
    }
    const timed = heard && audioAt !== null && p.firstFrameAt !== null ? turnStages(heard, { decided, audio: audioAt, firstFrame: p.firstFrameAt }) : null;
    if (timed) observeTurn(this.deps.metrics, timed.latencyMs, timed.stages);
    const interrupted = abort.signal.aborted && !line.over;
    const text = p.text;
    const t: Turn = {
      role: 'agent',
      text,
      heard_text: interrupted ? p.heardText : text,
      interrupted,
      start: line.clock(p.firstFrameAt ?? p.startedAt),
      end: line.clock(),
      ...(reply.responseId ? { response_id: reply.responseId } : {}),
      ...(reply.intent !== null ? { intent: reply.intent } : {}),
      ...(Object.keys(reply.entities).length > 0 ? { entities: reply.entities } : {}),
      ...(timed ? { latency_ms: timed.latencyMs, stages: timed.stages } : {}),
      ...(reply.dtmf ? { dtmf: reply.dtmf } : {}),
    };
    line.record({
      type: 'turn',
      now: this.deps.now(),
      turn: t,
      interrupted: interrupted && !line.closing, // the callee's interruptions, not the credit guard's cut
      ...(timed ? { latencyMs: timed.latencyMs } : {}),
      ...(reply.nextState ? { agentState: reply.nextState } : {}),
    });
    if (reply.hangup && !interrupted) {
      if (this.deps.escalate && escalatesToPerson(reply) && (await this.deps.escalate().catch(() => false))) return true;
      await line.end('agent_hangup');
    }
    return true;
  }

  /** The carrier echoed a mark: how far the callee heard the reply playing. */
  marked(name: string): void {
    this.playback?.marked(name);
  }

  /** The callee spoke over the agent: the reply stops (unless it is the credit guard's last words). */
  bargeIn(): void {
    if (this.deps.line.closing) return; // the credit guard's last words are not cut
    this.calleeTook = true;
    if (this.waiting) this.turnAbort?.abort(); // nothing plays: the reply being made for the answers is not said
    const heard = this.cut();
    if (heard !== null) this.deps.log.debug({ heard_bytes: heard }, 'barge-in: playback cleared');
  }

  /** Stops the reply playing and tells the carrier to drop what it queued; the bytes heard, or null when nothing played. */
  cut(): number | null {
    return this.playback?.cut() ?? null;
  }

  /** The agent's turn ends: its playback and whatever of its reply is still coming. */
  stop(): void {
    this.turnAbort?.abort();
  }
}
