// What a call needs of a telephony carrier (a voice model's route: src/providers/<carrier>/voice.ts):
// place a call whose media the carrier streams to the gateway's stream URL (Twilio's Media Streams
// protocol), report its progress, and hang it up. The gateway's side of the media is src/voice/media.ts.
import type { EndReason } from '../../machines/voice-call.machine.ts';

export interface DialRequest {
  callId: string;
  to: string;
  from: string | null;
  /** The WebSocket URL the carrier opens for the call's media. */
  streamUrl: string;
  /** Sent back in the stream's `start` frame (`customParameters`): the call id and its one-time token. */
  streamParameters: Record<string, string>;
  ringTimeoutMs: number;
  maxDurationMs: number;
}

/** The carrier's news of a call (its status callbacks). */
export interface CarrierEvents {
  ringing(): void;
  answered(): void;
  /** Over: before an answer with why (`busy`, `no_answer`, `failed`); after it, the callee hung up. */
  ended(outcome: { status?: 'busy' | 'no_answer' | 'failed'; reason?: EndReason }): void;
}

export interface Carrier {
  /** Places the call; resolves with the carrier's id for it once the carrier accepted it. */
  dial(req: DialRequest, events: CarrierEvents): Promise<string>;
  /** Ends the call (before an answer: cancels it). Idempotent; a call already over is no error. */
  hangup(carrierCallId: string): Promise<void>;
  /** How long the carrier says the call lasted, whole seconds; null while it is not over (or it does not say). */
  duration?(carrierCallId: string): Promise<number | null>;
}
