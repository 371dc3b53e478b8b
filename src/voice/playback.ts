// One agent reply on its way to the callee (a call's speaking side, src/voice/speaking.ts): its lines' audio in
// the carrier wire's encoding and whole chunks, sent paced by the instance's one clock
// (src/voice/pacer.ts): chunk n leaves at n × its length, 300 ms ahead, with a mark every 200 ms and
// at the end of the audio so far. The marks the carrier echoes back say how much the callee heard:
// a reply cut by a barge-in keeps the text of that much (`heardText`). The audio may grow while it
// plays (an LLM's sentences, each synthesized as it completes): when it runs out before the reply
// is complete the playback waits, and the pacing starts again from the next chunk when more comes.
import type { Logger } from 'pino';
import { SILENCE_BYTE, type SpeechClip } from '../speech/clip.ts';
import type { MediaWire } from '../providers/carrier-wire/types.ts';
import type { Pacer } from './pacer.ts';
import type { MediaTap } from './recorder.ts';

/** A mark after every 200 ms of a reply: the resolution of `heard_text`. */
const MARK_EVERY_MS = 200;
/**
 * How far ahead of real time the playback runs: the carrier's buffer against a stalled event loop
 * (a GC pause, a busy instance). The carrier plays what it holds without a gap while the gateway
 * is late by less than this; at 40 ms a 100 ms stall was a gap the callee heard, and one the
 * carrier's side reads as the agent having finished. A barge-in's `clear` drops what is queued,
 * so the lead costs nothing there, and the echoed marks still say what was heard.
 */
export const LEAD_MS = 300;

/** What a playback sends frames on: the carrier's stream now (null once detached) and its sid. */
export interface PlaybackOutlet {
  send(frame: Record<string, unknown>): void;
  sid: string | null;
}

export interface PlaybackDeps {
  wire: MediaWire;
  pacer: Pacer;
  now(): number;
  log: Logger;
  /** Where frames go now; null while no stream is attached (nothing is sent). */
  outlet(): PlaybackOutlet | null;
  /** Whether the call is over (hung up, disposed): a playback then ends at once. */
  over(): boolean;
  /** A mark name not used before on this call. */
  markName(): string;
  /** The call's recording (src/voice/recorder.ts): told each chunk sent and each `clear`. */
  tap?(): MediaTap | null;
}

export class Playback {
  readonly startedAt: number;
  /** When the first frame was sent; null while none was. */
  firstFrameAt: number | null = null;
  /** Bytes of the reply's audio the echoed marks say the callee heard. */
  heardBytes = 0;
  private audio: Buffer = Buffer.alloc(0);
  private complete = false;
  /** Marks sent: name → bytes of the reply sent before it. */
  private readonly marks = new Map<string, number>();
  /** Each line's text and where its audio ends in the reply's. */
  private readonly lines: { text: string; end: number }[] = [];
  private checkPlayed: (() => boolean) | undefined;

  /** `abort`: the agent's turn, aborted by a barge-in or the hang-up (the reply's chat stream and syntheses with it). */
  constructor(
    private readonly deps: PlaybackDeps,
    readonly abort: AbortController,
  ) {
    this.startedAt = deps.now();
  }

  /** Adds a line: its audio (padded with silence to whole chunks, so the next line starts on a chunk of its own) and its text. */
  append(text: string, clip: SpeechClip): void {
    const audio = wholeChunks(clip, this.deps.wire);
    this.audio = this.audio.length === 0 ? audio : Buffer.concat([this.audio, audio]);
    this.lines.push({ text, end: this.audio.length });
  }

  /** No more lines are coming: the playback ends once what it has has played. */
  finish(): void {
    this.complete = true;
    this.checkPlayed?.();
  }

  /** Whether any line was added. */
  get said(): boolean {
    return this.lines.length > 0;
  }

  /** Every line's text. */
  get text(): string {
    return this.lines.map((l) => l.text).join(' ');
  }

  /** What the callee heard: the lines played whole, then the words that fit of the one cut. */
  get heardText(): string {
    return heardOf(this.lines, this.heardBytes);
  }

  /**
   * Sends the audio as it is due; resolves once the reply has played (its last mark is back), was
   * cut, or the call is over.
   */
  play(): Promise<void> {
    const { wire, pacer } = this.deps;
    const chunksPerMark = Math.max(1, Math.round(MARK_EVERY_MS / wire.chunkMs));
    return new Promise<void>((resolve) => {
      let base = performance.now();
      let chunk = 0;
      let starved = false;
      const sendDue = (now: number): boolean => {
        const outlet = this.deps.outlet();
        if (this.abort.signal.aborted || !outlet) return false;
        const chunks = this.audio.length / wire.chunkBytes;
        if (chunk >= chunks) {
          starved = true;
          return !this.complete;
        }
        if (starved) {
          base = now - chunk * wire.chunkMs;
          starved = false;
        }
        const due = Math.min(chunks, Math.floor((now - base + LEAD_MS) / wire.chunkMs) + 1);
        for (; chunk < due; chunk++) {
          const sent = (chunk + 1) * wire.chunkBytes;
          const bytes = this.audio.subarray(chunk * wire.chunkBytes, sent);
          outlet.send(wire.media(outlet.sid, bytes));
          this.deps.tap?.()?.sent(bytes, wire.audio, wireRate(wire));
          this.firstFrameAt ??= this.deps.now();
          if ((chunk + 1) % chunksPerMark === 0 || sent >= this.audio.length) {
            const name = this.deps.markName();
            this.marks.set(name, sent);
            outlet.send(wire.mark(outlet.sid, name));
          }
        }
        return true;
      };
      const step = (now: number): boolean => {
        try {
          return sendDue(now);
        } catch (err) {
          this.deps.log.warn({ err }, 'playback failed');
          this.abort.abort(); // the reply ends here; the call goes on
          return false;
        }
      };
      const played = () => {
        // Played once the last mark comes back (or cut by a barge-in, or the call over, meanwhile).
        if (this.abort.signal.aborted || (this.complete && this.heardBytes >= this.audio.length) || this.deps.over()) {
          this.abort.signal.removeEventListener('abort', onAbort);
          pacer.remove(step);
          resolve();
          return true;
        }
        return false;
      };
      const onAbort = () => played();
      this.abort.signal.addEventListener('abort', onAbort, { once: true });
      this.checkPlayed = played;
      pacer.add(step);
    });
  }

  /** A mark the carrier echoed: the callee heard up to it. Marks echoed after a cut say nothing. */
  marked(name: string): void {
    if (this.abort.signal.aborted) return;
    const bytes = this.marks.get(name);
    if (bytes !== undefined && bytes > this.heardBytes) this.heardBytes = bytes;
    this.checkPlayed?.();
  }

  /** Stops the reply and tells the carrier to drop what it queued; the bytes heard, or null when nothing had played. */
  cut(): number | null {
    if (this.firstFrameAt === null || this.abort.signal.aborted) return null;
    this.abort.abort();
    const outlet = this.deps.outlet();
    outlet?.send(this.deps.wire.clear(outlet.sid));
    this.deps.tap?.()?.cleared();
    return this.heardBytes;
  }
}

/** The sample rate of the wire's audio (its chunks' bytes per ms). */
const wireRate = (wire: MediaWire): number => (wire.chunkBytes / wire.chunkMs) * (wire.audio === 'pcm16' ? 500 : 1000);

/** A line's audio in the wire's encoding and rate, padded with silence to whole chunks. */
export function wholeChunks(clip: SpeechClip, wire: MediaWire): Buffer {
  const audio = wire.encode?.(clip) ?? clip.as(wire.audio);
  const short = (wire.chunkBytes - (audio.length % wire.chunkBytes)) % wire.chunkBytes;
  return short === 0 ? audio : Buffer.concat([audio, Buffer.alloc(short, SILENCE_BYTE[wire.audio])]);
}

/** What the callee heard of a reply's lines when `bytes` of its audio played: the lines played whole, then the words that fit of the one cut. */
function heardOf(lines: { text: string; end: number }[], bytes: number): string {
  const heard: string[] = [];
  let start = 0;
  for (const line of lines) {
    if (bytes >= line.end) heard.push(line.text);
    else {
      const words = line.text.split(/\s+/).filter(Boolean);
      const cut = words.slice(0, Math.floor((words.length * (bytes - start)) / (line.end - start))).join(' ');
      if (cut) heard.push(cut);
      break;
    }
    start = line.end;
  }
  return heard.join(' ');
}
