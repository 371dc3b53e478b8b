// Where the gateway's transferred calls went, by the carrier's call id, for a carrier that asks the
// gateway after the hand-off (Exotel: its API cannot redirect a live call, so the flow's Connect
// applet, placed after the Voicebot, dials whom its dynamic URL names: GET /v1/voice/exotel/connect,
// src/http/routes/v1-voice-exotel.ts). Kept in the store (`voice_handoffs`, one document per
// carrier call, for TRANSFER_TTL_MS), written before the carrier is asked to transfer (so before the
// call's stream is closed for the hand-off: src/voice/dialling.ts), for carriers that ask back only
// (`asksAfterTransfer`), so whichever instance the applet's request reaches (another one behind the
// load balancer, or this one restarted) answers it. An expired record is never answered (the read
// compares times; the store's TTL index only cleans up).
import type { Store } from '../store/port.ts';

/** How long a hand-off's number is kept for the carrier's ask. */
export const TRANSFER_TTL_MS = 10 * 60_000;

export interface Handoff {
  /** The number the call is handed to (E.164). */
  to: string;
  /** The call's caller id, when it had one. */
  from: string | null;
}

interface HandoffDoc {
  /** The carrier's id for the call (Exotel's CallSid). */
  _id: string;
  to: string;
  from: string | null;
  expires_at: Date;
  [k: string]: unknown;
}

export class Handoffs {
  private readonly records;

  constructor(
    store: Store,
    private readonly now: () => number,
  ) {
    this.records = store.collection<HandoffDoc>('voice_handoffs');
  }

  /** Expired records are swept by the store's TTL (cleanup only: `of` compares times itself). */
  async init(): Promise<void> {
    await this.records.createIndex({ keys: { expires_at: 1 }, expireAfterSeconds: 0 });
  }

  /** Records the hand-off of the carrier's call `carrierCallId` (durably: resolves once written). */
  async record(carrierCallId: string, handoff: Handoff): Promise<void> {
    const doc: HandoffDoc = { _id: carrierCallId, to: handoff.to, from: handoff.from, expires_at: new Date(this.now() + TRANSFER_TTL_MS) };
    await this.records.replaceOne({ _id: carrierCallId }, doc, { upsert: true });
  }

  /** The hand-off of the carrier's call `carrierCallId`, if any instance made one in the last TRANSFER_TTL_MS. */
  async of(carrierCallId: string): Promise<Handoff | undefined> {
    const found = await this.records.findOne({ _id: carrierCallId, expires_at: { $gt: new Date(this.now()) } });
    return found ? { to: found.to, from: found.from } : undefined;
  }
}
