// Inbound calls (issue 41 §4): a call to one of the numbers a voice model owns (src/voice/numbers.ts)
// reaches the gateway through its carrier: Twilio's incoming-call webhook (src/voice/inbound-twilio.ts),
// Exotel's flow asking its Voicebot applet's URL (src/voice/inbound-exotel.ts), or the simulator
// ringing the gateway (POST /admin/voice/simulator/calls). Each carrier's edge authenticates the
// request and says which call came in; `InboundCalls.answer` decides, and the carrier's edge speaks
// the answer back in its own terms:
//   - a number of ours whose model has a route of that carrier account: the call is placed as any
//     call is (`VoiceCalls.answerInbound`: the number's owner's concurrent calls, its wallet's floor,
//     the model's rules, the reservation), billed to the number's owner, `direction: "inbound"`,
//     with the number's agent and first message; its actor adopts the carrier's call instead of
//     dialling (src/voice/inbound-leg.ts), and the answer is the call's stream URL and token;
//   - a number we do not have (or not on that carrier's account): refused with a spoken line;
//   - the owner at its concurrent calls' limit, a wallet that cannot cover the least a call needs,
//     or any other refusal of the call: refused with a spoken line; nothing was held, so it is free.
import type { Logger } from 'pino';
import { ApiError } from '../errors.ts';
import type { Payer } from '../billing/types.ts';
import type { IdentityDirectory } from '../identity/directory.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';
import type { ModelCatalog } from '../models/catalog.ts';
import type { RouteConfig } from '../models/types.ts';
import { walletIdOf } from '../billing/money.ts';
import type { VoiceCallBody } from './checks.ts';
import {
  INBOUND_STREAM_TIMEOUT_MS,
  UNAVAILABLE_LINE,
  UNKNOWN_NUMBER_LINE,
  type InboundAnswer,
  type InboundProvider,
  type IncomingCall,
  type NumberRoute,
} from './inbound-leg.ts';
import { VoiceNumbers, type NumberOwner } from './numbers.ts';
import type { Store } from '../store/port.ts';
import type { VoiceCalls } from './service.ts';
import type { RoutedModel } from '../providers/routes.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import type { SimulatorCarrier } from '../providers/simulator/voice.ts';
import { answerTwilioCall, type TwilioWebhook } from './inbound-twilio.ts';
import { answerExotelCall, type ExotelIncomingAsk } from './inbound-exotel.ts';
import { ringFromSimulator, type SimulatedInbound } from './inbound-simulator.ts';

/** How long a carrier call's answer is kept for a repeated ask. */
const ANSWER_KEPT_MS = 60_000;

export interface InboundDeps {
  /** Where the numbers are kept (src/voice/numbers.ts; the admin routes manage them through `InboundCalls.numbers`). */
  store: Store;
  models: Pick<ModelCatalog, 'get' | 'list'>;
  resolveRoutes(model: RoutedModel): ResolvedRoute[];
  /** The simulator carrier, whose callers ring the gateway. */
  simulator: Pick<SimulatorCarrier, 'ring'>;
  voice: Pick<VoiceCalls, 'answerInbound'>;
  identity: Pick<IdentityDirectory, 'orgOwner' | 'kycOf' | 'exists'>;
  /** The gateway's public base URL (http[s]://…). */
  baseUrl(): string;
  logger: Logger;
  now(): number;
}

/** Who pays for a number's calls: its owner's wallet (an organization's KYC is its owner's), under no key. */
export async function ownerPayer(identity: InboundDeps['identity'], owner: NumberOwner): Promise<Payer> {
  const userId = owner.type === 'user' ? owner.id : ((await identity.orgOwner(owner.id)) ?? 0);
  return {
    walletId: walletIdOf(owner.type, owner.id),
    ownerType: owner.type,
    ownerId: owner.id,
    userId,
    keyId: 0,
    keyPrefix: INBOUND_KEY_PREFIX,
    kycVerified: userId !== 0 && (await identity.kycOf(userId)),
  };
}

/** The key prefix an inbound call's usage record carries (no key placed it). */
export const INBOUND_KEY_PREFIX = 'inbound';

/** The Meter's principal for an inbound call: no key, no key limits; the payer is given, so it is not read from it. */
const principalOf = (payer: Payer): ApiKeyPrincipal => ({
  keyId: 0,
  jti: INBOUND_KEY_PREFIX,
  prefix: INBOUND_KEY_PREFIX,
  userId: payer.userId,
  scopes: ['voice'],
  rpm: null,
  tpd: null,
  cpd: null,
  cpm: null,
});

export class InboundCalls {
  private readonly log: Logger;

  readonly numbers: VoiceNumbers;
  /** The answers of the last minute's calls, by carrier call. */
  private readonly recent = new Map<string, Promise<InboundAnswer>>();

  constructor(private readonly deps: InboundDeps) {
    this.log = deps.logger.child({ component: 'voice-inbound' });
    this.numbers = new VoiceNumbers({ store: deps.store, models: deps.models, accountExists: (o) => deps.identity.exists(o), now: deps.now });
  }

  /** Twilio's incoming-call webhook: the TwiML to answer it with (403 when it is not Twilio's). */
  twilio(hook: Omit<TwilioWebhook, 'url'> & { path: string }): Promise<string> {
    const { path, ...signed } = hook;
    const url = `${this.deps.baseUrl().replace(/\/+$/, '')}${path}`; // what Twilio signed: the public URL it posted to
    return answerTwilioCall({ answer: (c) => this.answer(c), models: this.deps.models, resolveRoutes: this.deps.resolveRoutes }, { ...signed, url });
  }

  /** An Exotel flow's Voicebot applet asking for an inbound call's stream: its URL, or null (404). */
  exotel(ask: ExotelIncomingAsk): Promise<string | null> {
    return answerExotelCall({ answer: (c) => this.answer(c), routeOf: (...a) => this.routeOf(...a), resolveRoutes: this.deps.resolveRoutes }, ask);
  }

  /** A simulated caller at `from` rings the gateway's number `to`. */
  simulator(call: { to: string; from: string }): Promise<SimulatedInbound> {
    return ringFromSimulator({ answer: (c) => this.answer(c), simulator: this.deps.simulator }, call);
  }

  /** The model whose route of `provider` a number's calls come through, with that route's index; null: not ours on that carrier. */
  async routeOf(number: string, provider: InboundProvider, through: (config: RouteConfig) => boolean): Promise<NumberRoute | null> {
    const owned = await this.numbers.get(number);
    const model = owned ? await this.deps.models.get(owned.model) : null;
    const route = model ? model.routes.findIndex((r) => r.provider === provider && through(r)) : -1;
    return owned && model && route >= 0 ? { owned, model, route } : null;
  }

  /**
   * The call's answer, once per carrier call: a carrier that asks again for the same call (Twilio
   * retrying its webhook, Exotel's applet asked twice) gets the first answer, not a second call.
   */
  answer(call: IncomingCall): Promise<InboundAnswer> {
    const key = `${call.provider}:${call.carrierCallId}`;
    const known = this.recent.get(key);
    if (known) return known;
    const answer = this.decide(call);
    this.recent.set(key, answer);
    answer.catch(() => this.recent.delete(key)); // a failure (the store unreachable) is not kept: the carrier's retry is asked afresh
    setTimeout(() => this.recent.delete(key), ANSWER_KEPT_MS).unref();
    return answer;
  }

  private async decide(call: IncomingCall): Promise<InboundAnswer> {
    const log = this.log.child({ provider: call.provider, carrier_call_id: call.carrierCallId });
    const found = await this.routeOf(call.number, call.provider, call.through);
    if (!found) {
      log.info({ number: call.number }, 'inbound call to a number that is not ours: refused');
      return { kind: 'refused', reason: 'unknown_number', line: UNKNOWN_NUMBER_LINE };
    }
    const { owned, route } = found;
    const body: VoiceCallBody = {
      model: owned.model,
      to: owned.number,
      from: call.caller.slice(0, 32),
      ...(owned.agent ? { agent: owned.agent } : {}),
      ...(owned.first_message ? { first_message: owned.first_message } : {}),
      ...(owned.language ? { language: owned.language } : {}),
      ...(owned.voice ? { voice: owned.voice } : {}),
      ...(owned.max_duration_seconds ? { max_duration_seconds: owned.max_duration_seconds } : {}),
      ...(owned.webhook_id !== undefined ? { webhook_id: owned.webhook_id } : {}),
    };
    try {
      const payer = await ownerPayer(this.deps.identity, owned.owner);
      const { callId, token } = await this.deps.voice.answerInbound(principalOf(payer), payer, body, {
        route,
        carrierCallId: call.carrierCallId,
        ringTimeoutMs: INBOUND_STREAM_TIMEOUT_MS,
        ...(call.attach ? { attach: call.attach } : {}),
      });
      log.info({ call_id: callId, model: owned.model }, 'inbound call taken');
      const base = this.deps.baseUrl().replace(/\/+$/, '').replace(/^http/, 'ws');
      return { kind: 'stream', callId, streamUrl: `${base}/v1/voice/calls/${callId}/stream`, parameters: { call_id: callId, token } };
    } catch (err) {
      // Refused before anything was held: the caller hears why in general terms, the log says which.
      const reason = err instanceof ApiError ? err.code : 'error';
      if (err instanceof ApiError) log.info({ reason, message: err.message }, 'inbound call refused');
      else log.error({ err }, 'inbound call could not be placed');
      return { kind: 'refused', reason, line: UNAVAILABLE_LINE };
    }
  }
}

export { UNAVAILABLE_LINE, UNKNOWN_NUMBER_LINE };
