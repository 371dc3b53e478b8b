// Twilio's incoming-call webhook (POST /v1/voice/inbound/twilio: the URL an account sets as its
// number's "A call comes in" webhook, src/http/routes/v1-voice-inbound.ts). Twilio posts a form
// (`CallSid`, `AccountSid`, `From`, `To`, `Direction=inbound`, `CallStatus=ringing`, …) signed with
// X-Twilio-Signature exactly as its status callbacks are (src/providers/twilio/voice.ts): believed
// only when the signature verifies under the auth token of a twilio route of that `AccountSid`
// (the number's model's, or, for a number we do not have, any model's), else 403 and nothing
// happens. It is answered with TwiML: `<Connect><Stream url>` with the call's id and one-time token
// as `<Parameter>`s (the outbound call's TwiML, src/providers/twilio/voice.ts), or, refused,
// `<Say>` a line and `<Hangup/>`.
import { ApiError } from '../errors.ts';
import type { ModelCatalog } from '../models/catalog.ts';
import type { RoutedModel } from '../providers/routes.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import { streamTwiml, verifySignature, xml } from '../providers/twilio/voice.ts';
import { callerIdE164 } from '../shared/phones.ts';
import { UNKNOWN_NUMBER_LINE, type AnswerIncoming, type InboundAnswer } from './inbound-leg.ts';

export interface TwilioInboundDeps {
  answer: AnswerIncoming;
  models: Pick<ModelCatalog, 'list'>;
  resolveRoutes(model: RoutedModel): ResolvedRoute[];
}

/** The webhook as it reached the gateway: its public URL (what Twilio signed), its form's pairs in order, its signature. */
export interface TwilioWebhook {
  url: string;
  params: [string, string][];
  signature: string | undefined;
}

/** A refusal Twilio speaks: the line, then the hang-up. */
export const refusalTwiml = (line: string): string => `<Response><Say>${xml(line)}</Say><Hangup/></Response>`;

export const answerTwiml = (answer: InboundAnswer): string =>
  answer.kind === 'stream' ? streamTwiml({ streamUrl: answer.streamUrl, streamParameters: answer.parameters }) : refusalTwiml(answer.line);

/** Whether the webhook is Twilio's: signed with the auth token of a twilio route of its `AccountSid` (any model's). */
async function signedByTwilio(deps: TwilioInboundDeps, hook: TwilioWebhook, accountSid: string): Promise<boolean> {
  if (hook.signature === undefined || accountSid === '') return false;
  const tokens = new Set<string>();
  for (const model of await deps.models.list()) {
    if (model.type !== 'voice') continue;
    const resolved = deps.resolveRoutes(model);
    model.routes.forEach((r, at) => {
      const key = resolved[at]?.apiKey;
      if (r.provider === 'twilio' && r.account_sid === accountSid && key) tokens.add(key);
    });
  }
  return [...tokens].some((token) => verifySignature(token, hook.url, hook.params, hook.signature!));
}

/** The TwiML answering an incoming call; 403 permission_denied when the webhook is not Twilio's. */
export async function answerTwilioCall(deps: TwilioInboundDeps, hook: TwilioWebhook): Promise<string> {
  const p = new Map(hook.params);
  const accountSid = p.get('AccountSid') ?? '';
  if (!(await signedByTwilio(deps, hook, accountSid)))
    throw new ApiError('permission_denied', 'The webhook is not signed by Twilio for a carrier account of ours.');
  const callSid = p.get('CallSid') ?? '';
  const to = p.get('To') ?? '';
  if (callSid === '' || to === '') return refusalTwiml(UNKNOWN_NUMBER_LINE);
  const answer = await deps.answer({
    provider: 'twilio',
    number: callerIdE164(to),
    caller: p.get('From') ?? '',
    carrierCallId: callSid,
    through: (config) => config.account_sid === accountSid,
  });
  return answerTwiml(answer);
}
