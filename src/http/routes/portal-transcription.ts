// The signed-in user's account's speech, for the dashboard: the same jobs, and the same permission,
// as /v1/audio/transcriptions/jobs with any of the account's keys (an organization's members all see
// the organization's jobs, as their keys do), in the portal's page shape; and the dashboard's own
// calls, made by the session with no key (`dashboardPrincipal`), through the very handlers /v1 uses,
// so the service, the Meter and the bill are the same:
//   GET  /portal/transcription/jobs[/{id}[/audio]]   list, one job (or its transcript as text, SRT,
//        WebVTT), its recording with byte ranges
//   POST /portal/transcription/jobs                   upload a recording as a job (multipart)
//   POST /portal/audio/transcriptions                 a short clip, transcribed (multipart)
//   POST /portal/audio/speech                         a text spoken (JSON; streamed audio)
//   GET  /portal/models                               the models active on the account, with prices
// Cookie-signed writes follow the dashboard's cross-site rule (requireSession); the recording, which
// an <audio> element on any page could embed, is refused to other sites' pages too (assertNotEmbedded).
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireSession, sessionOf } from '../auth.ts';
import { assertNotEmbedded } from '../browser.ts';
import { Closed, errors, KeyString } from '../schemas.ts';
import { Limit, limitOf, PageOf } from '../pages.ts';
import { acceptUploads } from '../uploads.ts';
import { sendBlob } from '../ranges.ts';
import { answerClip, answerJobRead, answerNewJob, Job, JobFormatQuery, JobId, JobStatusFilter } from './v1-audio.ts';
import { answerSpeech, SpeechBodySchema } from './v1-speech.ts';
import { ModelEntry } from './v1.ts';
import { dashboardPrincipal } from '../../identity/keys.ts';
import { PRICING_FIELDS, publicModel } from '../../models/catalog.ts';

export function registerPortalTranscriptionRoutes(app: App, deps: AppDeps): void {
  const { billing, transcriptionJobs } = deps.services;
  const security = [{ session: [] }];
  app.get(
    '/portal/transcription/jobs',
    {
      preHandler: requireSession(deps),
      schema: {
        tags: ['transcription'],
        security,
        summary:
          "Your account's transcription jobs (your organization's while you belong to one), newest first, without their transcripts (GET /portal/transcription/jobs/{id} has them); pass next_after as after",
        querystring: Closed({ limit: Limit, after: Type.Optional(KeyString(64)), status: Type.Optional(JobStatusFilter) }),
        response: { 200: PageOf(Job), ...errors(400, 401) },
      },
    },
    async (req) => {
      const { after, status } = req.query;
      const account = await billing.accountOf(sessionOf(req).id);
      const page = await transcriptionJobs.list(account.walletId, {
        limit: limitOf(req.query),
        ...(after !== undefined ? { after } : {}),
        ...(status !== undefined ? { status } : {}),
        transcripts: false,
      });
      return { data: page.data, has_more: page.has_more, next_after: page.has_more ? page.last_id : null };
    },
  );

  app.get(
    '/portal/transcription/jobs/:id',
    {
      preHandler: requireSession(deps),
      schema: {
        tags: ['transcription'],
        security,
        summary: "One of your account's jobs, as GET /v1/audio/transcriptions/jobs/{id} answers it (response_format text, srt or vtt too)",
        params: JobId,
        querystring: JobFormatQuery,
        response: { 200: Job, ...errors(400, 401, 404, 409) },
      },
    },
    async (req, reply) => {
      const account = await billing.accountOf(sessionOf(req).id);
      return answerJobRead(deps, account.walletId, req.params.id, req.query.response_format, reply);
    },
  );

  app.get(
    '/portal/transcription/jobs/:id/audio',
    {
      preHandler: requireSession(deps),
      schema: {
        tags: ['transcription'],
        security,
        summary: "The job's recording as uploaded, with byte ranges (206, Content-Range; 416 for a range outside it); another account's is 404",
        params: JobId,
        response: { ...errors(401, 403, 404, 416) },
      },
    },
    async (req, reply) => {
      assertNotEmbedded(req);
      const account = await billing.accountOf(sessionOf(req).id);
      const { key, contentType } = await transcriptionJobs.recording(account.walletId, req.params.id);
      reply.header('cross-origin-resource-policy', 'same-origin').header('x-content-type-options', 'nosniff');
      return sendBlob(reply, deps.services.blobs, key, contentType, req.headers.range);
    },
  );

  // What the pages offer and what it costs: /v1/models' entries with each model's pricing (the
  // fields of its type), so a page can say what a call will cost before it is made.
  const Pricing = Type.Object(Object.fromEntries(PRICING_FIELDS.map((f) => [f, Type.Optional(Type.Number())])));
  app.get(
    '/portal/models',
    {
      preHandler: requireSession(deps),
      schema: {
        tags: ['transcription'],
        security,
        summary: 'The models active on your account, as GET /v1/models lists them, each with its pricing',
        response: { 200: Type.Object({ data: Type.Array(Type.Object({ ...ModelEntry.properties, pricing: Pricing })) }), ...errors(401) },
      },
    },
    async (req) => {
      const account = await billing.accountOf(sessionOf(req).id);
      return {
        data: (await deps.services.models.activeFor(account.walletId)).map((m) => ({ ...publicModel(m), pricing: m.pricing as Record<string, number> })),
      };
    },
  );

  // The scope typed as App: fastify's register types its plugin's instance with the default type
  // provider, not the parent's, so without it acceptUploads (which takes App) would not take it.
  app.register(async (scope: App) => {
    await acceptUploads(scope);
    scope.post(
      '/portal/transcription/jobs',
      {
        preHandler: requireSession(deps),
        schema: {
          tags: ['transcription'],
          security,
          summary: 'Start a transcription job from the dashboard (the fields of POST /v1/audio/transcriptions/jobs; billed to your account)',
          consumes: ['multipart/form-data'],
        },
      },
      async (req, reply) => answerNewJob(deps, dashboardPrincipal(sessionOf(req).id), req, reply, '/portal/transcription/jobs'),
    );
    scope.post(
      '/portal/audio/transcriptions',
      {
        preHandler: requireSession(deps),
        schema: {
          tags: ['transcription'],
          security,
          summary: 'Transcribe a short clip from the dashboard (the fields and answer of POST /v1/audio/transcriptions; billed to your account)',
          consumes: ['multipart/form-data'],
        },
      },
      async (req, reply) => answerClip(deps, dashboardPrincipal(sessionOf(req).id), 'sync', req, reply),
    );
  });

  app.post(
    '/portal/audio/speech',
    {
      preHandler: requireSession(deps),
      bodyLimit: deps.config.http.inferenceBodyLimitBytes,
      schema: {
        tags: ['transcription'],
        security,
        summary: 'Speak a text from the dashboard (the body and answer of POST /v1/audio/speech; billed to your account)',
        body: SpeechBodySchema,
        response: { ...errors(400, 401, 402, 403, 404, 503) },
      },
    },
    async (req, reply) => answerSpeech(deps, dashboardPrincipal(sessionOf(req).id), req, reply),
  );
}
