// The stream URL an Exotel flow's Voicebot applet asks for (the v1 API's calls: src/providers/exotel/classic.ts
// says why the applet's URL is an endpoint of the gateway's): GET /v1/voice/exotel/voicebot with
// the call's details as Exotel sends them, answered `{url}` (src/http/routes/v1-voice-exotel.ts).
//   - the call live here whose carrier sid is `CallSid` (and id `CustomField`): its stream URL with
//     `call_id` and the one-time `token` in the query (Exotel hands them to the bot as the start's
//     custom_parameters, where the token is checked as on the newer API), and the applet's
//     `sample-rate` when its URL gave one (16 or 24 kHz streams: src/providers/carrier-wire/exotel.ts);
//   - a call id of ours that is not live here (cancelled or timed out while it rang, then answered):
//     its stream URL without a token, which the stream edge accepts and closes at once, ending the
//     leg at Exotel (src/ws/voice.ts): the only way to end it Exotel offers;
//   - anything else, or a live call whose sid is not `CallSid`: null (404), as if there were no call.
import type { CallMedia } from './media.ts';

const CALL_ID = /^call_[0-9a-f]{24}$/;
const RATES = new Set(['8000', '16000', '24000']);

export interface VoicebotAsk {
  callSid: string;
  customField: string | undefined;
  sampleRate: string | undefined;
}

export function voicebotStreamUrl(
  deps: { media(callId: string): CallMedia | undefined; streamToken(callId: string): string; baseUrl: string },
  ask: VoicebotAsk,
): string | null {
  const callId = ask.customField ?? '';
  if (!CALL_ID.test(callId)) return null;
  const url = new URL(`${deps.baseUrl.replace(/\/+$/, '').replace(/^http/, 'ws')}/v1/voice/calls/${callId}/stream`);
  url.searchParams.set('call_id', callId);
  const media = deps.media(callId);
  if (media) {
    if (media.carrierCall === null || media.carrierCall !== ask.callSid) return null;
    url.searchParams.set('token', deps.streamToken(callId));
  }
  if (ask.sampleRate !== undefined && RATES.has(ask.sampleRate)) url.searchParams.set('sample-rate', ask.sampleRate);
  return url.toString();
}
