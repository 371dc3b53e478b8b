// The inbound calls' vocabulary (src/voice/inbound.ts decides; each carrier's edge,
// src/voice/inbound-*.ts, authenticates and speaks the answer back), and an inbound call's leg: a
// call already up at its carrier (it rang one of a model's numbers and the carrier asked the gateway
// what to do), which the call's actor takes as its own instead of dialling. The actor's `dial`
// effect runs as for any call; the route the call came through is "dialled" by adopting the
// carrier's call id, so everything after it (the media stream whose start answers the call, the
// hang-up through the carrier's API, a finalize after kill -9, the charge) is the outbound call's path.
import type { Carrier, CarrierEvents } from '../providers/carrier.ts';
import type { ModelDoc, RouteConfig } from '../models/types.ts';
import type { VoiceNumber } from './numbers.ts';

export interface InboundLeg {
  /** The index of the model's route the call came in through. */
  route: number;
  /** The carrier's id of the call (Twilio's CallSid, Exotel's CallSid, the simulator's). */
  carrierCallId: string;
  /** How long the carrier's media stream may take to start once the call was taken (its `ring_timeout`). */
  ringTimeoutMs: number;
  /** Told the call's news sink once the actor took the call (the simulator's caller reports its hang-up through it). */
  attach?(events: CarrierEvents): void;
}

/**
 * The model's usable carriers for an inbound call: the route it came in through alone, its carrier
 * adopting the call rather than dialling one. No status callbacks: a carrier sends an inbound call's
 * to the number's own URL, never one of this call's, so the stream's `stop` is its end (the call does
 * not wait for news that cannot come). Empty when that route is not usable (the caller is refused).
 */
export function adoptedCarriers(carriers: readonly { route: number; carrier: Carrier }[], leg: InboundLeg): { route: number; carrier: Carrier }[] {
  const taken = carriers.find((c) => c.route === leg.route);
  if (!taken) return [];
  const { carrier } = taken;
  const adopted: Carrier = {
    wire: carrier.wire,
    dial: async (_req, events) => {
      leg.attach?.(events);
      return leg.carrierCallId;
    },
    hangup: (id) => carrier.hangup(id),
    ...(carrier.duration ? { duration: (id: string) => carrier.duration!(id) } : {}),
  };
  return [{ route: leg.route, carrier: adopted }];
}

/** What a caller hears when the number is not one of ours. */
export const UNKNOWN_NUMBER_LINE = 'Sorry, this number is not in service. Goodbye.';
/** What a caller hears when the number's account cannot take the call now (its limit of calls at once, its wallet, its model). */
export const UNAVAILABLE_LINE = 'Sorry, we cannot take your call right now. Please call again later. Goodbye.';
/** How long the carrier's media stream may take to start once the call was taken (else the call ends no_answer, ring_timeout). */
export const INBOUND_STREAM_TIMEOUT_MS = 15_000;

export type InboundProvider = 'twilio' | 'exotel' | 'simulator';

/** A call that came in, as its carrier's edge authenticated it. */
export interface IncomingCall {
  provider: InboundProvider;
  /** The number called, E.164. */
  number: string;
  /** The caller's number, as the carrier gave it. */
  caller: string;
  carrierCallId: string;
  /** Whether a route of the number's model (already of `provider`) is the one the call came through: its carrier account. */
  through(config: RouteConfig): boolean;
  /** Given the call's news sink once its actor took the call (the simulator's caller hangs up through it). */
  attach?(events: CarrierEvents): void;
}

export type InboundAnswer =
  | { kind: 'stream'; callId: string; streamUrl: string; parameters: { call_id: string; token: string } }
  | { kind: 'refused'; reason: string; line: string };

/** A number of ours, its model and the index of the model's route its calls come through. */
export interface NumberRoute {
  owned: VoiceNumber;
  model: ModelDoc;
  route: number;
}

/** What the carriers' edges ask of the inbound calls (src/voice/inbound.ts). */
export type AnswerIncoming = (call: IncomingCall) => Promise<InboundAnswer>;
