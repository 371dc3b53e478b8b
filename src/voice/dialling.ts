// Dialling one call: the model's carrier routes asked in order to place it (the carrier failover
// rule below), the carrier's news (ringing, answered, ended) turned into the call actor's events, and
// the hang-up at the carrier that took it. Which protocol the call's media stream speaks follows the
// carrier dialling (then the one that took the call).
import type { Logger } from 'pino';
import type { DialInput, VoiceCallEvent } from '../../machines/voice-call.machine.ts';
import type { Carrier, DialRequest } from '../providers/carrier.ts';
import type { CallActor } from './call-line.ts';
import type { MediaWire } from '../providers/carrier-wire/types.ts';
import { twilioWire } from '../providers/carrier-wire/twilio.ts';

/** The outcome a carrier reports when its call ends. */
type CarrierOutcome = Parameters<Parameters<Carrier['dial']>[1]['ended']>[0];

/**
 * The carrier failover rule: a carrier fails over before an answer only. A route that refuses the
 * call (its API down, a bad account) passes it to the next; once a carrier took it, its callee's
 * answer (busy, no answer, too) is the answer. Unlike the router's failover of an upstream request
 * (src/providers/router.ts), which retries a failed request on the next route: a call a carrier took
 * is the callee's, and a second carrier would ring the callee twice.
 */
export async function dialBeforeAnswer<T>(
  routes: readonly { route: number; carrier: Carrier }[],
  dial: (carrier: Carrier, route: number) => Promise<T>,
  refused: (err: unknown, route: number) => void,
): Promise<T> {
  let lastError: unknown = new Error('no carrier');
  for (const { route, carrier } of routes) {
    try {
      return await dial(carrier, route);
    } catch (err) {
      lastError = err;
      refused(err, route);
    }
  }
  throw lastError;
}

export interface DiallingDeps {
  callId: string;
  /** The model's usable carrier routes, in order: a dial that one refuses goes to the next (before any answer). */
  carriers: { route: number; carrier: Carrier }[];
  actor: CallActor;
  streamUrl: string;
  /** The one-time token the stream's `start` frame must carry. */
  token: string;
  log: Logger;
  now(): number;
  /** The carrier told the answer (before the actor did). */
  onAnswered(at: number): void;
  /** The call asks who answered (its `voicemail`): a carrier that detects machines is asked to. */
  machineDetection?: boolean;
  /** A transfer of the call to `to` is asked of a carrier that asks back after it (src/voice/handoffs.ts): resolves once it is kept. */
  onHandoff?(carrierCallId: string, to: string, from: string | null): Promise<void>;
}

export class Dialling {
  private carrierCallId: string | null = null;
  /** The carrier's id for the call (once a carrier took it): what an Exotel flow's applet proves it asks for this call with. */
  get carrierCall(): string | null {
    return this.carrierCallId;
  }
  private carrier: Carrier | null = null;
  private carrierEnded = false;
  /** The call's caller id (its `from`; null: the route's): a transfer shows it too. */
  private from: string | null = null;
  /** The protocol of the carrier dialling (then of the one that took the call). */
  wire: MediaWire;

  constructor(private readonly deps: DiallingDeps) {
    this.wire = (deps.carriers[0]?.carrier.wire ?? twilioWire).gateway;
  }

  /** Places the call (the rule: `dialBeforeAnswer`); resolves with `<route index>:<the carrier's id for it>`. */
  async dial(input: DialInput): Promise<string> {
    const req: DialRequest = {
      callId: this.deps.callId,
      to: input.to,
      from: input.from,
      streamUrl: this.deps.streamUrl,
      streamParameters: { call_id: this.deps.callId, token: this.deps.token },
      ringTimeoutMs: input.ringTimeoutMs,
      maxDurationMs: input.maxDurationMs,
      ...(this.deps.machineDetection ? { machineDetection: true } : {}),
    };
    this.from = input.from;
    const tell = (event: VoiceCallEvent) =>
      void this.deps.actor
        .send(event, { wait: 'applied' })
        .catch((err: unknown) => this.deps.log.warn({ err, event: event.type }, 'call actor did not take carrier news'));
    const events = {
      ringing: () => tell({ type: 'carrier.ringing', now: this.deps.now() }),
      answered: () => {
        const at = this.deps.now();
        this.deps.onAnswered(at); // the stream must start within the media timeout
        tell({ type: 'carrier.answered', now: at });
      },
      ended: (outcome: CarrierOutcome) => {
        this.carrierEnded = true;
        tell({ type: 'carrier.ended', now: this.deps.now(), ...outcome });
      },
    };
    return dialBeforeAnswer(
      this.deps.carriers,
      async (carrier, route) => {
        this.wire = carrier.wire.gateway; // its stream may open before its dial answers
        const id = await carrier.dial(req, events);
        this.carrier = carrier;
        this.carrierCallId = id;
        return `${route}:${id}`;
      },
      (err, route) => this.deps.log.warn({ err, route }, 'carrier refused the call; trying the next route'),
    );
  }

  /** Whether the carrier that took the call reports its progress by status callbacks (its end among them). */
  get reportsByCallback(): boolean {
    return this.carrier?.callbacks !== undefined;
  }

  /** Whether the carrier that took the call detects answering machines itself (asked to: Twilio's AMD). */
  get detectsMachines(): boolean {
    return this.deps.machineDetection === true && this.carrier?.detectsMachines === true;
  }

  /** Hangs up at the carrier that took the call, if it is still up there. */
  async hangup(): Promise<void> {
    if (this.carrier && this.carrierCallId !== null && !this.carrierEnded)
      await this.carrier.hangup(this.carrierCallId).catch((err: unknown) => this.deps.log.warn({ err }, 'carrier hang-up failed'));
  }

  /** Whether the carrier that took the call (or, before one did, the first route's) can transfer it. */
  get canTransfer(): boolean {
    return (this.carrier ?? this.deps.carriers[0]?.carrier)?.transfer !== undefined;
  }

  /** Asks the carrier that took the call to bridge it to `to` (src/voice/transfer.ts). */
  async transfer(to: string): Promise<void> {
    if (!this.carrier?.transfer || this.carrierCallId === null) throw new Error("the call's carrier cannot transfer it");
    // Kept before the carrier is asked, so before the call's stream is closed for it (an Exotel
    // flow's Connect applet asks as soon as the stream ends); a store that fails refuses the transfer.
    if (this.carrier.asksAfterTransfer) await this.deps.onHandoff?.(this.carrierCallId, to, this.from);
    await this.carrier.transfer(this.carrierCallId, to, this.from);
  }

  /** The same, unheard (the live side is going away without a hang-up). */
  drop(): void {
    if (this.carrier && this.carrierCallId !== null && !this.carrierEnded) void this.carrier.hangup(this.carrierCallId).catch(() => undefined);
  }
}
