// What the pieces of one call's live side share (src/voice/media.ts composes them: dialling,
// listening, speaking, timers): the carrier's media stream once attached, whether the call is over,
// the turn queue and the activity the silence watchdog reads, and the way to tell the call's actor.
// In memory only, never persisted; audio never goes through it to the actor.
import type { Logger } from 'pino';
import type { EndReason, VoiceCallEvent } from '../../machines/voice-call.machine.ts';
import type { CallAgent } from './agent.ts';
import type { RecognitionContext } from '../shared/recognition-context.ts';
import type { MediaTap } from './recorder.ts';

/** What the media loop sends the carrier and how it closes the stream (the WebSocket edge's side). */
export interface MediaStream {
  send(frame: Record<string, unknown>): void;
  close(code: number, reason: string): void;
}

/** What the call says and hears with: built once, when the call is answered (src/voice/live.ts). */
export interface Conversation {
  agent: CallAgent;
  /**
   * The call's stt model on one utterance (8 kHz PCM): its text ('' when nothing was heard) and,
   * when the recogniser gives them, other readings (the text's first: src/voice/understanding.ts).
   * `context` is what the agent expects to hear (its `listening()`: the question it asked, the answer's shape).
   */
  recognise(samples: Int16Array, signal: AbortSignal, context?: RecognitionContext): Promise<{ text: string; alternatives?: string[] }>;
}

/** The call's actor (the runtime's ref). */
export interface CallActor {
  send(event: VoiceCallEvent, opts: { wait: 'applied' | 'durable' }): Promise<unknown>;
}

export interface CallLineDeps {
  actor: CallActor;
  log: Logger;
  now(): number;
  /** The live side decided the call ends: its timers stop (src/voice/timers.ts). */
  stopTimers(): void;
}

export class CallLine {
  answeredAt: number | null = null;
  stream: MediaStream | null = null;
  streamSid: string | null = null;
  /** The call's recording, once its stream started (src/voice/recorder.ts); null: not recorded. */
  tap: MediaTap | null = null;
  started = false;
  hungUp = false;
  disposed = false;
  /**
   * When the callee hung up (the carrier's `stop`, or its stream closed): their last words are
   * still recognised and recorded, at this time; nothing more is said. Null: the line is up.
   */
  goneAt: number | null = null;
  /** The credit guard's last words are playing: nothing else is said, and they are not cut. */
  closing = false;
  /** Callee utterances are answered one at a time, in order (the opening and idle prompts too). */
  queue: Promise<void> = Promise.resolve();
  /** Turns being recognised or answered (the silence watchdog waits for them). */
  busy = 0;
  /** The last time anyone spoke (or a reply ended): the silence watchdog's base. */
  lastActivityAt = 0;
  /** Idle prompts since the callee last spoke. */
  prompts = 0;
  /** Aborted when the live side is disposed (a recognition in flight stops). */
  readonly abort = new AbortController();

  constructor(private readonly deps: CallLineDeps) {}

  /** Hung up or disposed: nothing more is said or sent. */
  get over(): boolean {
    return this.hungUp || this.disposed;
  }

  /** Seconds since the answer. */
  clock(at = this.deps.now()): number {
    return Math.round((at - (this.answeredAt ?? at)) / 10) / 100;
  }

  record(event: VoiceCallEvent): void {
    void this.deps.actor
      .send(event, { wait: 'applied' })
      .catch((err: unknown) => this.deps.log.warn({ err, event: event.type }, 'call actor did not take an event'));
  }

  /** A turn of work queued after the ones before it; `busy` while it runs (the silence watchdog waits). */
  enqueue(work: () => Promise<void>, failed: string): void {
    this.busy += 1;
    this.queue = this.queue
      .then(work)
      .catch((err: unknown) => this.deps.log.warn({ err }, failed))
      .finally(() => {
        this.busy -= 1;
        this.lastActivityAt = this.deps.now();
      });
  }

  /** The media loop decided the call ends (`at`: when it did, default now). */
  async end(reason: EndReason, at = this.deps.now()): Promise<void> {
    if (this.over) return;
    this.deps.stopTimers();
    await this.deps.actor
      .send({ type: 'media.ending', now: at, reason }, { wait: 'durable' })
      .catch((err: unknown) => this.deps.log.warn({ err, reason }, 'call actor did not take the end'));
  }
}
