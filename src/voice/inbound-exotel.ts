// Exotel's inbound calls: a call to an ExoPhone runs the flow the account connected to it, whose
// Voicebot applet asks its URL, the gateway's GET /v1/voice/exotel/voicebot (the outbound flow's
// too: src/voice/exotel-flow.ts), for the stream to open, with the call's details in the query:
// `CallSid`, `CallFrom` (the caller), `CallTo` (the ExoPhone the call landed on), `Direction=incoming`
// and no `CustomField` (the gateway placed nothing). Exotel signs nothing, so the ask is believed only
// when Exotel's own API, asked with the route's credentials (`GET /v1/Accounts/{sid}/Calls/{CallSid}.json`),
// knows the call as an inbound one to that ExoPhone that is still up: a CallSid is known to Exotel
// and whoever it streams the call to. Then the call is taken (src/voice/inbound.ts) and answered with
// its stream URL, the call id and one-time token in its query (as an outbound flow call's, whose
// stream edge is the same), and the applet's `sample-rate`.
// A refusal cannot be spoken from here (the applet takes a URL, not words): a number that is not
// ours, or a call refused, is 404, and the flow goes on to its next applet (docs/api/voice.md: the
// account's flow says the line there).
import { ApiError } from '../errors.ts';
import type { RoutedModel } from '../providers/routes.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import { callOf, detailsField } from '../providers/exotel/classic.ts';
import { carrierRest } from '../providers/carrier-rest.ts';
import { callerIdE164 } from '../shared/phones.ts';
import type { AnswerIncoming, InboundProvider, NumberRoute } from './inbound-leg.ts';
import type { RouteConfig } from '../models/types.ts';

const RATES = new Set(['8000', '16000', '24000']);

export interface ExotelInboundDeps {
  answer: AnswerIncoming;
  routeOf(number: string, provider: InboundProvider, through: (config: RouteConfig) => boolean): Promise<NumberRoute | null>;
  resolveRoutes(model: RoutedModel): ResolvedRoute[];
}

/** The applet's ask for an inbound call. */
export interface ExotelIncomingAsk {
  callSid: string;
  from: string;
  to: string;
  sampleRate: string | undefined;
}

/** Whether the ask is an inbound call's (Exotel writes `incoming`; its call details `inbound`). */
export const isIncoming = (direction: string | undefined): boolean => direction !== undefined && /^in(coming|bound)$/i.test(direction);

/** The stream URL for an inbound call; null (404) for a number that is not ours or a refused call; 403 for a call Exotel does not know as one to that number. */
export async function answerExotelCall(deps: ExotelInboundDeps, ask: ExotelIncomingAsk): Promise<string | null> {
  const number = callerIdE164(ask.to);
  const found = await deps.routeOf(number, 'exotel', () => true);
  if (!found) return null;
  const config = found.model.routes[found.route]!;
  const route = deps.resolveRoutes(found.model)[found.route];
  if (!route?.apiKey || !config.account_sid || !config.api_token) return null;
  const rest = carrierRest('exotel', route.baseUrl, { user: route.apiKey, password: config.api_token }, 5000);
  const details = await rest('GET', `/v1/Accounts/${encodeURIComponent(config.account_sid)}/Calls/${encodeURIComponent(ask.callSid)}.json`).catch(() => null);
  const field = details ? detailsField(callOf(details)) : () => undefined;
  const to = field('To');
  const known =
    field('Sid') === ask.callSid &&
    isIncoming(String(field('Direction'))) &&
    typeof to === 'string' &&
    callerIdE164(to) === number &&
    field('Status') === 'in-progress';
  if (!known) throw new ApiError('permission_denied', 'Exotel does not know this CallSid as a call in progress to that number.');
  const answer = await deps.answer({
    provider: 'exotel',
    number,
    caller: ask.from,
    carrierCallId: ask.callSid,
    through: (r) => r.account_sid === config.account_sid,
  });
  if (answer.kind === 'refused') return null;
  const url = new URL(answer.streamUrl);
  url.searchParams.set('call_id', answer.parameters.call_id);
  url.searchParams.set('token', answer.parameters.token);
  if (ask.sampleRate !== undefined && RATES.has(ask.sampleRate)) url.searchParams.set('sample-rate', ask.sampleRate);
  return url.toString();
}
