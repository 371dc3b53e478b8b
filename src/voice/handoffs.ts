// Where the gateway's transferred calls went, by the carrier's call id, for a carrier that asks the
// gateway after the hand-off (Exotel: its API cannot redirect a live call, so the flow's Connect
// applet, placed after the Voicebot, dials whom its dynamic URL names: GET /v1/voice/exotel/connect,
// src/http/routes/v1-voice-exotel.ts). Kept in memory for TRANSFER_TTL_MS, on the instance that held
// the call's media (its Exotel stream): the applet asks within seconds of the stream's end.
import { LRUCache } from 'lru-cache';

/** How long a hand-off's number is kept for the carrier's ask. */
export const TRANSFER_TTL_MS = 10 * 60_000;

export interface Handoff {
  /** The number the call is handed to (E.164). */
  to: string;
  /** The call's caller id, when it had one. */
  from: string | null;
}

export class Handoffs {
  private readonly byCarrierCall = new LRUCache<string, Handoff>({ max: 10_000, ttl: TRANSFER_TTL_MS });

  record(carrierCallId: string, handoff: Handoff): void {
    this.byCarrierCall.set(carrierCallId, handoff);
  }

  /** The hand-off of the carrier's call `carrierCallId`, if this instance made one lately. */
  of(carrierCallId: string): Handoff | undefined {
    return this.byCarrierCall.get(carrierCallId);
  }
}
