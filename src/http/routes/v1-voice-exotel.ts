// GET /v1/voice/exotel/voicebot: the URL an account sets on its Exotel flow's Voicebot applet, for
// calls placed through Exotel's v1 API (an exotel route with `app_id`). Exotel asks it, once the
// callee answered, for the WebSocket URL to stream the call to, with the call's details in the query
// (`CallSid`, `CustomField`: the call id the gateway sent, `CallFrom`, `CallTo`, `Direction`, …;
// other fields are Exotel's to add, so the query is open), and opens what `url` names. The rules
// (which call, proven by its `CallSid`; a call no longer live here) are src/voice/exotel-flow.ts.
// No API key: Exotel calls it; what it answers is worth nothing without the call's Exotel sid.
//
// GET /v1/voice/exotel/connect: the dynamic URL of the Connect applet an account puts after the
// Voicebot applet, for transfers (Exotel's APIs cannot redirect a live call: the gateway ends the
// Voicebot's stream and the flow moves on to the Connect applet, which asks whom to dial). Answered
// in Exotel's Programmable Connect form, `{fetch_after_attempt: false, destination: {numbers: [to]},
// outgoing_phone_number?}`, for a call the gateway (any instance) handed off lately (src/voice/handoffs.ts), by
// its `CallSid`; 404 otherwise (the applet's fallback then applies). Docs: docs/api/voice.md, Transfers.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { errors } from '../schemas.ts';
import { ApiError } from '../../errors.ts';
import { isIncoming } from '../../voice/inbound-exotel.ts';

const Field = Type.Optional(Type.String({ maxLength: 256 }));

export function registerExotelVoicebotRoute(app: App, deps: AppDeps): void {
  app.get(
    '/v1/voice/exotel/connect',
    {
      schema: {
        tags: ['v1'],
        summary: "Whom an Exotel flow's Connect applet dials after a transferred call's stream ended (its dynamic URL)",
        querystring: Type.Object({ CallSid: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: true }),
        response: {
          200: Type.Object({
            fetch_after_attempt: Type.Boolean(),
            destination: Type.Object({ numbers: Type.Array(Type.String()) }),
            outgoing_phone_number: Type.Optional(Type.String()),
          }),
          ...errors(400, 404),
        },
      },
    },
    async (req) => {
      const handoff = await deps.services.voice.handoffs.of(req.query.CallSid);
      if (!handoff) throw new ApiError('not_found', 'No call of this gateway was transferred with that CallSid.');
      return {
        fetch_after_attempt: false,
        destination: { numbers: [handoff.to] },
        ...(handoff.from ? { outgoing_phone_number: handoff.from } : {}),
      };
    },
  );

  app.get(
    '/v1/voice/exotel/voicebot',
    {
      schema: {
        tags: ['v1'],
        summary: "The stream URL for an Exotel flow's Voicebot applet (a call placed through Exotel's v1 API)",
        // Open: Exotel sends the call's details and may add fields; only these are read.
        querystring: Type.Object(
          { CallSid: Type.String({ minLength: 1, maxLength: 64 }), CustomField: Field, 'sample-rate': Field, Direction: Field, CallFrom: Field, CallTo: Field },
          { additionalProperties: true },
        ),
        response: { 200: Type.Object({ url: Type.String() }), ...errors(400, 403, 404) },
      },
    },
    async (req) => {
      const q = req.query;
      // A call that came in on one of our numbers (no CustomField: the gateway placed nothing): src/voice/inbound-exotel.ts.
      if ((q.CustomField ?? '') === '' && isIncoming(q.Direction)) {
        const ask = { callSid: q.CallSid, from: q.CallFrom ?? '', to: q.CallTo ?? '', sampleRate: q['sample-rate'] };
        const url = await deps.services.inbound.exotel(ask);
        if (url === null) throw new ApiError('not_found', 'No number of this gateway takes that call now.');
        return { url };
      }
      const url = deps.services.voice.voicebotStreamUrl({ callSid: q.CallSid, customField: q.CustomField, sampleRate: q['sample-rate'] });
      if (url === null) throw new ApiError('not_found', 'No call of this gateway with that CallSid and CustomField.');
      return { url };
    },
  );
}
