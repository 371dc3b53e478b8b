// A call's recording (src/voice/recordings.ts), on both edges that read calls (registerCallRoutes:
// /v1 with a key of scope `voice`, /portal with the dashboard's session):
//   GET    {prefix}/voice/calls/{id}/recording[?format=wav|mp3]  the recording, with byte ranges
//          (206 + Content-Range; a range outside it 416 in the error envelope); WAV: 8 kHz 16-bit
//          stereo, channel 0 the callee, channel 1 the agent; MP3: the same, 32 kb/s
//   DELETE {prefix}/voice/calls/{id}/recording                    204; it is gone at once (an
//          organization's member: 403 role_forbidden; its owner and admins may)
// Another account's call, like an unknown one, is 404 (the call is looked up as the account's first).
// The dashboard's <audio> reads it by the session's cookie: another site embedding it is refused (403).
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { errors, KeyString } from '../schemas.ts';
import { sendBlob } from '../ranges.ts';
import { Binary, documented } from '../openapi.ts';
import { assertNotEmbedded } from '../browser.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OrgRole } from '../../identity/orgs.ts';

const CallId = Type.Object({ id: KeyString(64) });
const Format = Type.Object({ format: Type.Optional(Type.Union([Type.Literal('wav'), Type.Literal('mp3')])) }, { additionalProperties: false });

/** Where calls are read (v1-voice.ts's CallsEdge, which registers these routes with its own). */
export interface RecordingEdge {
  prefix: string;
  preHandler: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  security: Record<string, string[]>[];
  tags: string[];
  /** The wallet whose calls the request sees (an organization member: the organization's). */
  account: (req: FastifyRequest) => Promise<string>;
  /** The caller's organization role (null: a personal account): a member may not delete a recording. */
  role: (req: FastifyRequest) => Promise<OrgRole | null>;
}

export function registerRecordingRoutes(app: App, deps: AppDeps, edge: RecordingEdge): void {
  const { prefix, preHandler, security, tags, account, role } = edge;
  const recordings = () => {
    const r = deps.services.voice.recordings;
    if (!r) throw new Error('recordings are not configured');
    return r;
  };

  app.get(
    `${prefix}/voice/calls/:id/recording`,
    {
      preHandler,
      schema: {
        tags,
        summary: "The call's recording (WAV, or ?format=mp3), with byte ranges; channel 0 the callee, channel 1 the agent",
        security,
        params: CallId,
        querystring: Format,
        response: { ...errors(400, 401, 403, 404, 409, 416) },
      },
      ...documented({
        responses: {
          200: { description: 'The whole recording', content: { 'audio/wav': Binary, 'audio/mpeg': Binary } },
          206: { description: 'The range asked (Content-Range)', content: { 'audio/wav': Binary, 'audio/mpeg': Binary } },
        },
      }),
    },
    async (req, reply) => {
      assertNotEmbedded(req); // a cookie-signed read from another site's <audio> is refused before any lookup
      const owner = await account(req);
      await deps.services.voice.get(owner, req.params.id); // 404 unless the call is the account's
      const { key, contentType } = await recordings().blob(owner, req.params.id, req.query.format ?? 'wav');
      reply.header('cross-origin-resource-policy', 'same-origin').header('x-content-type-options', 'nosniff').header('cache-control', 'private, no-store');
      return sendBlob(reply, deps.services.blobs, key, contentType, req.headers.range);
    },
  );

  app.delete(
    `${prefix}/voice/calls/:id/recording`,
    {
      preHandler,
      schema: {
        tags,
        summary: "Delete the call's recording (204; an organization's owner or admins, not its members)",
        security,
        params: CallId,
        response: { 204: Type.Null(), ...errors(401, 403, 404, 409) },
      },
    },
    async (req, reply) => {
      const owner = await account(req);
      await deps.services.voice.get(owner, req.params.id);
      await recordings().remove(owner, req.params.id, await role(req));
      return reply.code(204).send(null);
    },
  );
}
