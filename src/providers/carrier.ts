// The carrier port: what a call needs of a telephony carrier (a voice model's route, implemented by
// src/providers/<carrier>/voice.ts): place a call whose media the carrier streams to the gateway's
// stream URL (in its own protocol: `wire`, src/providers/carrier-wire/), report its progress, and
// hang it up; a carrier that reports by status callbacks also says which are its own and what they
// mean. It lives on the providers' floor so the carriers implement it without importing src/voice/;
// the calls (src/voice/) use it from here. The gateway's side of the media is src/voice/media.ts.
import { timingSafeEqual } from 'node:crypto';
import type { EndReason } from '../../machines/voice-call.machine.ts';
import type { WireProtocol } from './carrier-wire/types.ts';

export interface DialRequest {
  callId: string;
  to: string;
  from: string | null;
  /** The WebSocket URL the carrier opens for the call's media. */
  streamUrl: string;
  /** Sent back in the stream's `start` frame: the call id and its one-time token (each carrier has its channel for them). */
  streamParameters: Record<string, string>;
  ringTimeoutMs: number;
  maxDurationMs: number;
  /** The call asks who answered (its `voicemail`): a carrier that `detectsMachines` turns its detection on. */
  machineDetection?: boolean;
}

/** The carrier's news of a call (its status callbacks). */
export interface CarrierEvents {
  ringing(): void;
  answered(): void;
  /** Over: before an answer with why (`busy`, `no_answer`, `failed`); after it, the callee hung up. */
  ended(outcome: { status?: 'busy' | 'no_answer' | 'failed'; reason?: EndReason }): void;
}

/** What one status callback says of its call (out of order and repeated ones are the machine's to ignore). */
export type StatusNews =
  | { kind: 'ringing' }
  | { kind: 'answered' }
  /** `durationS`: the answered seconds the carrier counted (0 when it does not say). */
  | { kind: 'ended'; outcome: Parameters<CarrierEvents['ended']>[0]; durationS: number }
  /** The carrier's answering-machine detection decided (Twilio's AsyncAmdStatusCallback): `detail` its own value, `decisionMs` how long it took. */
  | { kind: 'answered_by'; answeredBy: 'human' | 'machine' | 'unknown'; detail: string; decisionMs: number }
  | { kind: 'ignored' };

/**
 * A carrier's final call status (Twilio's CallStatus and Exotel's Status spell them alike) as news:
 * `completed` after `durationS` answered seconds, or why it was never answered; null for another status.
 */
export function endedNews(status: string | undefined, durationS: number): StatusNews | null {
  const seconds = Number.isFinite(durationS) && durationS > 0 ? durationS : 0;
  switch (status) {
    case 'completed':
      return { kind: 'ended', outcome: {}, durationS: seconds };
    case 'busy':
      return { kind: 'ended', outcome: { status: 'busy' }, durationS: 0 };
    case 'no-answer':
      return { kind: 'ended', outcome: { status: 'no_answer' }, durationS: 0 };
    case 'failed':
      return { kind: 'ended', outcome: { status: 'failed' }, durationS: 0 };
    default:
      return null;
  }
}

/** A status callback as it reached POST /v1/voice/calls/{id}/callback/{provider}. */
export interface CallbackRequest {
  callId: string;
  /** The public URL it was sent to (with its query). */
  url: string;
  /** The body's parameters, in order. */
  params: [string, string][];
  /**
   * How the body came (default `form`): a form (`application/x-www-form-urlencoded`, the only body
   * Twilio's signature covers as parameters), a JSON object or multipart fields (Exotel's
   * StatusCallbackContentType).
   */
  encoding?: 'form' | 'json' | 'multipart';
  /** The request's X-Twilio-Signature, if any. */
  signature?: string;
  /** The `token` query parameter of the URL, if any (the per-call secret of carriers that do not sign). */
  token?: string;
}

export interface Carrier {
  /** The protocol its media stream speaks. */
  wire: WireProtocol;
  /** Places the call; resolves with the carrier's id for it once the carrier accepted it. */
  dial(req: DialRequest, events: CarrierEvents): Promise<string>;
  /** Ends the call (before an answer: cancels it). Idempotent; a call already over is no error. */
  hangup(carrierCallId: string): Promise<void>;
  /**
   * A cold transfer: the answered call bridged to `to` (E.164), shown `from` (the call's caller id, or
   * null: the route's). Resolves once the carrier took it; the call's media stream then ends (not a
   * hang-up). Absent: this carrier cannot transfer (src/voice/transfer.ts).
   */
  transfer?(carrierCallId: string, to: string, from: string | null): Promise<void>;
  /**
   * The carrier asks the gateway whom to bridge a transferred call to after its stream ended (an
   * Exotel flow's Connect applet): the hand-off is kept for that ask (src/voice/handoffs.ts).
   */
  asksAfterTransfer?: boolean;
  /** How long the carrier says the call lasted, whole seconds; null while it is not over (or it does not say). */
  duration?(carrierCallId: string): Promise<number | null>;
  /** It detects answering machines itself when a dial asks (`machineDetection`), and tells by callback (`answered_by` news). */
  detectsMachines?: boolean;
  /** Its status callbacks (none for a carrier that reports through `events` only). */
  callbacks?: {
    /** Whether this carrier sent it (its signature, or the call's secret), compared in constant time. */
    authentic(req: CallbackRequest): boolean;
    news(params: ReadonlyMap<string, string>): StatusNews;
  };
}

/**
 * The carrier's API answered 401 or 403: it refused the route's credentials (its account SID, token
 * or key is wrong). A call every route refused so ends `carrier_credentials_refused`, not
 * `carrier_unavailable` (the machine reads `endReason`).
 */
export class CarrierCredentialsRefused extends Error {
  readonly endReason = 'carrier_credentials_refused' satisfies EndReason;

  constructor(
    readonly carrier: string,
    readonly status: number,
    detail: string,
  ) {
    super(`${carrier} refused the route's credentials (${status}): ${detail}`);
    this.name = 'CarrierCredentialsRefused';
  }
}

/** Whether a secret given by a peer (a token, a signature) is the expected one, compared in constant time. */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
