// POST /v1/audio/speech: the text's audio in the body (any format, chunked as produced), or, with
// `stream_format: "sse"`, as `speech.audio.delta` events then one `speech.audio.done`. The route
// translates only; the metered path is src/synthesis/service.ts. Everything that can be refused is
// refused before the status line (an ordinary JSON error); after it, an upstream failure cuts a raw
// body short (the connection is destroyed, so the client sees an incomplete response, never a
// complete-looking one) or ends an SSE stream with an `error` event. A client that stops reading is
// cut after `http.streamStallTimeoutMs` (src/http/open-streams.ts) and billed as one that left.
import { Type, type Static } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App, AppDeps } from '../types.ts';
import type { ApiKeyPrincipal } from '../../identity/keys.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { ApiError, toEnvelope } from '../errors.ts';
import { ErrorEnvelope, errors, FreeText, KeyString, OneOf } from '../schemas.ts';
import { Binary, documented, orNull, sseData } from '../openapi.ts';
import { CONTENT_TYPES } from '../../synthesis/formats.ts';
import { cancelOnDisconnect } from '../disconnect.ts';
import { stampOverhead } from '../overhead.ts';
import { SPEECH_FORMATS } from '../../providers/types.ts';
import { PCM_RATES } from '../../synthesis/formats.ts';

export const SpeechBodySchema = Type.Object(
  {
    model: KeyString(200),
    // Free text as /v1/understand's: no NUL, no unpaired surrogate (the provider gets it, the bill counts it).
    input: FreeText(100_000),
    voice: KeyString(128, { minLength: 1 }),
    response_format: Type.Optional(OneOf(SPEECH_FORMATS)),
    stream_format: Type.Optional(Type.Union([Type.Literal('sse'), Type.Literal('audio')])),
    sample_rate: Type.Optional(OneOf(PCM_RATES)),
    speed: Type.Optional(Type.Number({ minimum: 0.25, maximum: 4 })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    language: Type.Optional(Type.String({ pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$', maxLength: 35 })),
    instructions: Type.Optional(FreeText(4096)),
  },
  { additionalProperties: false },
);
/** A speech request's body as its schema admits it (the synthesis service's SpeechBody must take it). */
export type SpeechRequestBody = Static<typeof SpeechBodySchema>;

// For the document only (src/http/openapi.ts): the audio by its format's content type, or the events.
const SpeechEvent = Type.Union([
  Type.Object({ type: Type.Literal('speech.audio.delta'), audio: Type.String({ contentEncoding: 'base64' }) }),
  Type.Object({
    type: Type.Literal('speech.audio.done'),
    format: OneOf(SPEECH_FORMATS),
    sample_rate: orNull(Type.Integer()),
    usage: Type.Object({ type: Type.Literal('characters'), characters: Type.Integer() }),
  }),
  Type.Object({ type: Type.Literal('error'), error: ErrorEnvelope.properties.error }),
]);
const audioTypes = [...new Set(Object.values(CONTENT_TYPES))];
const SpeechAnswer = {
  description: 'The audio in response_format (its content type below), read as it is produced; with stream_format "sse", server-sent events',
  content: {
    ...Object.fromEntries(audioTypes.map((t) => [t, Binary])),
    'text/event-stream': sseData(SpeechEvent, "Each event's data: audio deltas, then done (or an error)"),
  },
};

export function registerSpeechRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/v1/audio/speech',
    {
      preHandler: requireApiKey(deps, 'audio'),
      bodyLimit: deps.config.http.inferenceBodyLimitBytes,
      ...documented({ responses: { 200: SpeechAnswer } }),
      schema: {
        tags: ['v1'],
        summary: 'Speak a text (OpenAI-compatible; raw audio, or server-sent events with stream_format: "sse")',
        security: [{ apiKey: [] }],
        body: SpeechBodySchema,
        response: { ...errors(400, 401, 402, 403, 404, 429, 503) },
      },
    },
    async (req, reply) => answerSpeech(deps, principalOf(req), req, reply),
  );
}

/**
 * Speaks `req.body` for `principal` (POST /v1/audio/speech, and the dashboard's try-a-voice): the
 * audio streamed raw or as events, billed once by what was sent.
 */
export async function answerSpeech(
  deps: AppDeps,
  principal: ApiKeyPrincipal,
  req: FastifyRequest & { body: SpeechRequestBody },
  reply: FastifyReply,
): Promise<void> {
  const synthesis = deps.services.speech;
  const prep = await synthesis.prepare(principal, req.body, req.id);
  const cancel = cancelOnDisconnect(reply);
  const speech = await synthesis.open(prep, cancel);
  reply.hijack();
  stampOverhead(reply); // the time to the headers: the first audio in hand, less the wait for it
  const res = reply.raw;
  const headers = reply.getHeaders() as Record<string, string>; // x-request-id, x-gateway-overhead-ms, a limited key's x-ratelimit-*
  const write = (data: string | Buffer) => deps.streams.write(res, data);
  await deps.streams.track(res, req.log, async () => {
    let how: 'done' | 'client_closed' | 'failed' = 'done';
    try {
      if (prep.sse) {
        res.writeHead(200, { ...headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
        try {
          for await (const chunk of speech.chunks) {
            if (cancel.aborted) break;
            await write(`data: {"type":"speech.audio.delta","audio":"${chunk.toString('base64')}"}\n\n`);
            speech.sent(chunk.length);
          }
          if (!cancel.aborted) {
            const done = {
              type: 'speech.audio.done',
              format: speech.format,
              sample_rate: speech.sampleRate,
              usage: { type: 'characters', characters: speech.characters },
            };
            await write(`data: ${JSON.stringify(done)}\n\n`);
          }
        } catch (err) {
          how = 'failed';
          const api = err instanceof ApiError ? err : new ApiError('model_unavailable', 'The upstream failed during the audio.');
          if (!cancel.aborted) await write(`data: ${JSON.stringify({ type: 'error', ...toEnvelope(api, req.id) })}\n\n`);
        }
        res.end();
      } else {
        res.writeHead(200, { ...headers, 'content-type': speech.contentType, 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
        try {
          for await (const chunk of speech.chunks) {
            if (cancel.aborted) break;
            await write(chunk);
            speech.sent(chunk.length);
          }
          res.end();
        } catch (err) {
          how = 'failed';
          req.log.warn({ err }, 'speech ended by upstream failure');
          res.destroy();
        }
      }
    } finally {
      if (cancel.aborted) how = 'client_closed';
      await speech.end(how).catch((err: unknown) => req.log.error({ err }, 'speech billing failed'));
    }
  });
}
