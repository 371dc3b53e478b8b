// POST /v1/voice/inbound/twilio: Twilio's incoming-call webhook, the URL an account sets as its
// number's "A call comes in" webhook (HTTP POST). No API key: Twilio calls it, and its
// X-Twilio-Signature decides (403 otherwise). Answered with TwiML (text/xml): the call's media
// stream, or a spoken refusal and a hang-up. The rules are src/voice/inbound.ts and
// src/voice/inbound-twilio.ts; Exotel's inbound calls come through the Voicebot applet's route
// (src/http/routes/v1-voice-exotel.ts), the simulator's through POST /admin/voice/simulator/calls.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { errors } from '../schemas.ts';

/** An incoming-call webhook's form is well under 4 KiB. */
const WEBHOOK_BODY_BYTES = 16_384;

export function registerInboundVoiceRoutes(app: App, deps: AppDeps): void {
  // Its own scope: the form parser (pairs in order, what Twilio's signature covers) is this route's only.
  void app.register(async (scope: App) => {
    scope.addContentTypeParser<string>('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body)));
    });
    scope.post(
      '/v1/voice/inbound/twilio',
      {
        bodyLimit: WEBHOOK_BODY_BYTES,
        schema: {
          tags: ['v1'],
          summary: "Twilio's incoming-call webhook for a number a voice model owns (signed; answered with TwiML)",
          consumes: ['application/x-www-form-urlencoded'],
          // Twilio's fields (CallSid, AccountSid, From, To, Direction, CallStatus, …): all are signed, so all are kept.
          body: Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 1024 })),
          response: { 200: Type.String({ description: 'TwiML' }), ...errors(400, 403, 413, 415) },
        },
      },
      async (req, reply) => {
        // Twilio signs a form's fields only: another body (JSON) is not a webhook of Twilio's, whatever it says.
        const form = /^application\/x-www-form-urlencoded/i.test(req.headers['content-type'] ?? '');
        const signature = req.headers['x-twilio-signature'];
        const twiml = await deps.services.inbound.twilio({
          path: req.url,
          params: form ? Object.entries(req.body) : [],
          signature: typeof signature === 'string' ? signature : undefined,
        });
        return reply.type('text/xml').send(twiml);
      },
    );
  });
}
