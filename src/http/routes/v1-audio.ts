// Transcription endpoints. Uploads (multipart) are streamed into the blob store, the fields read,
// then a service takes over:
//   POST /v1/audio/transcriptions        → src/transcription/sync.ts (the file deleted after the answer)
//   POST /v1/audio/translations          → the same, in mode translate (OpenAI's endpoint)
//   POST /v1/audio/transcriptions/jobs   → src/transcription/jobs.ts (the file kept: the job's recording)
//   GET  /v1/audio/transcriptions/jobs[/{id}]
//   POST /v1/audio/transcriptions/jobs/{id}/callback/{provider}: a provider's job callback, checked
//        against the job's token, handed to the job's actor through the runtime (any instance).
import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App, AppDeps } from '../types.ts';
import type { ApiKeyPrincipal } from '../../identity/keys.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { acceptUploads, readUpload, UPLOAD_LIMIT_BYTES, uploadFailed } from '../uploads.ts';
import { ApiError } from '../../errors.ts';
import { readFields } from '../../transcription/request.ts';
import { audioKeyOf, newJobId, type JobObject, type JobStatus } from '../../transcription/jobs.ts';
import { Type, type Static, type TSchema } from 'typebox';
import { CursorList, errors, KeyString, OneOf } from '../schemas.ts';
import { Binary, documented, errorAnswers, orNull, PlainText } from '../openapi.ts';
import { STT_MODES } from '../../shared/model-schema.ts';
import { RESPONSE_FORMATS } from '../../speech/formats.ts';
import { Limit, limitOf } from '../pages.ts';
import { cancelOnDisconnect } from '../disconnect.ts';
import { KEY_TERM_MAX_CHARS, KEY_TERMS_MAX } from '../../shared/recognition-context.ts';

/** A job's status, as a list filter. */
export const JobStatusFilter = OneOf<JobStatus>(['queued', 'processing', 'completed', 'failed']);

/** A job's id in a path. */
export const JobId = Type.Object({ id: KeyString(64) });

/** A transcription job as /v1 and the portal list it. */
export const Job = Type.Object({
  id: Type.String(),
  object: Type.Literal('transcription.job'),
  status: Type.String(),
  model: Type.String(),
  created_at: Type.Integer(),
  completed_at: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  language: Type.Optional(Type.String()),
  duration: Type.Optional(Type.Number()),
  text: Type.Optional(Type.String()),
  segments: Type.Optional(Type.Array(Type.Object({ speaker: Type.String(), start: Type.Number(), end: Type.Number(), text: Type.String() }))),
  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
});

/** The gateway's key-terms extension, as a form names an array (`key_terms[]` repeated) and without the brackets. */
function keyTermsFields() {
  const terms = (description: string) =>
    Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: KEY_TERM_MAX_CHARS }), { maxItems: KEY_TERMS_MAX, description }));
  return {
    'key_terms[]': terms(
      `Extension (not OpenAI's): words and phrases the speech likely holds, one field per term (at most ${KEY_TERMS_MAX}, each at most ${KEY_TERM_MAX_CHARS} characters); passed to the providers that take them (docs/api/audio.md)`,
    ),
    key_terms: terms("The same, under the name without '[]'"),
  };
}

// For the document only (src/http/openapi.ts): the multipart forms (read by src/transcription/request.ts,
// which takes exactly these fields: FORM_FIELDS) and the transcript in each response_format.
const Common = {
  file: Type.Unsafe<string>({ ...Binary, description: 'The recording (at most 25 MB; larger is answered 413)' }),
  model: Type.String({ description: 'An stt model id' }),
  prompt: Type.Optional(Type.String({ description: 'Text the speech follows or resembles (a question just asked, rare words)' })),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  ...keyTermsFields(),
};
const Language = {
  language: Type.Optional(Type.String({ description: "A BCP-47 or ISO-639-1 hint (OpenAI's name for it); omit to detect" })),
  language_code: Type.Optional(Type.String({ description: "The same hint under the spec's name" })),
  mode: Type.Optional(OneOf(STT_MODES)),
};
const form = (fields: Record<string, TSchema>) => Type.Object(fields, { additionalProperties: false });
const Granularity = Type.Union([Type.Literal('word'), Type.Literal('segment')]);
export const ClipForms = {
  sync: form({
    ...Common,
    ...Language,
    response_format: Type.Optional(OneOf(RESPONSE_FORMATS)),
    timestamp_granularities: Type.Optional(Type.Array(Granularity, { description: 'verbose_json only' })),
    'timestamp_granularities[]': Type.Optional(Type.Array(Granularity, { description: 'The same, as form encoders name an array' })),
    stream: Type.Optional(Type.Literal(false, { description: 'Streamed transcription is the realtime WebSocket' })),
  }),
  translations: form({ ...Common, response_format: Type.Optional(OneOf(RESPONSE_FORMATS)) }),
  jobs: form({
    ...Common,
    ...Language,
    diarize: Type.Optional(Type.Boolean({ default: true })),
    num_speakers: Type.Optional(Type.Integer({ minimum: 1, maximum: 20 })),
  }),
};
const TranscriptJson = Type.Object({
  text: Type.String(),
  language: orNull(Type.String()),
  duration: Type.Number(),
  segments: Type.Optional(Type.Array(Type.Object({ id: Type.Integer(), start: Type.Number(), end: Type.Number(), text: Type.String() }))),
  usage: Type.Object({ type: Type.Literal('duration'), seconds: Type.Integer() }),
});
const VerboseJson = Type.Object({
  task: Type.Union([Type.Literal('transcribe'), Type.Literal('translate')]),
  language: orNull(Type.String()),
  duration: Type.Number(),
  text: Type.String(),
  segments: Type.Optional(
    Type.Array(
      Type.Object({
        id: Type.Integer(),
        seek: Type.Integer(),
        start: Type.Number(),
        end: Type.Number(),
        text: Type.String(),
        tokens: Type.Array(Type.Integer()),
        temperature: Type.Number(),
        avg_logprob: Type.Number(),
        compression_ratio: Type.Number(),
        no_speech_prob: Type.Number(),
      }),
    ),
  ),
  words: Type.Optional(Type.Array(Type.Object({ word: Type.String(), start: Type.Number(), end: Type.Number() }))),
  usage: Type.Object({ type: Type.Literal('duration'), seconds: Type.Integer() }),
});
const clipAnswers = {
  200: {
    description: 'The transcript: JSON (response_format json, the default, or verbose_json), or text (text, srt, vtt)',
    content: { 'application/json': Type.Union([TranscriptJson, VerboseJson]), 'text/plain': PlainText },
  },
  ...errorAnswers(400, 401, 402, 403, 404, 413, 429, 503),
};

export function registerAudioRoutes(app: App, deps: AppDeps): void {
  // The scope typed as App: fastify's register types its plugin's instance with the default type
  // provider, not the parent's, so without it acceptUploads (which takes App) would not take it.
  app.register(async (scope: App) => {
    await acceptUploads(scope);
    // A short clip, transcribed, or translated to English (OpenAI's endpoint: the same path, mode translate).
    const clip = (endpoint: 'sync' | 'translations', summary: string) =>
      scope.post(
        endpoint === 'sync' ? '/v1/audio/transcriptions' : '/v1/audio/translations',
        {
          preHandler: requireApiKey(deps, 'audio'),
          ...documented({ body: { 'multipart/form-data': ClipForms[endpoint] }, responses: clipAnswers }),
          schema: { tags: ['v1'], summary, security: [{ apiKey: [] }], consumes: ['multipart/form-data'] },
        },
        async (req, reply) => answerClip(deps, principalOf(req), endpoint, req, reply),
      );
    clip('sync', 'Transcribe a short clip (Whisper-compatible; multipart)');
    clip('translations', "Translate a short clip's speech to English text (OpenAI's translations; multipart; models whose modes include translate)");

    scope.post(
      '/v1/audio/transcriptions/jobs',
      {
        preHandler: requireApiKey(deps, 'audio'),
        ...documented({
          body: { 'multipart/form-data': ClipForms.jobs },
          responses: {
            202: { description: 'The job, queued (its URL in Location)', content: { 'application/json': Job } },
            ...errorAnswers(400, 401, 402, 403, 404, 413, 429, 503),
          },
        }),
        schema: {
          tags: ['v1'],
          summary: 'Start a transcription job for a long recording (multipart; diarization)',
          security: [{ apiKey: [] }],
          consumes: ['multipart/form-data'],
        },
      },
      async (req, reply) => answerNewJob(deps, principalOf(req), req, reply),
    );
  });

  app.get(
    '/v1/audio/transcriptions/jobs/:id',
    {
      preHandler: requireApiKey(deps, 'audio'),
      ...documented({
        responses: {
          200: {
            description: 'The job (response_format json, the default), or its transcript as text, SubRip or WebVTT once completed',
            content: { 'application/json': Job, 'text/plain': PlainText },
          },
        },
      }),
      schema: {
        tags: ['v1'],
        summary: 'A transcription job; with response_format text, srt or vtt, its transcript in that format',
        security: [{ apiKey: [] }],
        params: JobId,
        querystring: JobFormatQuery,
        response: { 200: Job, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (req, reply) => {
      const { walletId } = await deps.services.billing.payerFor(principalOf(req));
      return answerJobRead(deps, walletId, req.params.id, req.query.response_format, reply);
    },
  );

  app.get(
    '/v1/audio/transcriptions/jobs',
    {
      preHandler: requireApiKey(deps, 'audio'),
      schema: {
        tags: ['v1'],
        summary: "The caller's transcription jobs, newest first (cursor pagination)",
        security: [{ apiKey: [] }],
        querystring: Type.Object(
          {
            limit: Limit,
            after: Type.Optional(KeyString(64)),
            status: Type.Optional(JobStatusFilter),
          },
          { additionalProperties: false },
        ),
        response: {
          200: CursorList(Job, Type.String()),
          ...errors(400, 401, 403),
        },
      },
    },
    async (req) => {
      const q = req.query;
      const { walletId } = await deps.services.billing.payerFor(principalOf(req));
      return deps.services.transcriptionJobs.list(walletId, {
        limit: limitOf(q),
        ...(q.after ? { after: q.after } : {}),
        ...(q.status ? { status: q.status } : {}),
      });
    },
  );

  // Providers' job callbacks: no API key (the provider calls); the job's token decides. Transcripts
  // of long recordings are large JSON, hence the upload-sized body limit.
  app.post(
    '/v1/audio/transcriptions/jobs/:id/callback/:provider',
    {
      bodyLimit: UPLOAD_LIMIT_BYTES,
      schema: {
        tags: ['v1'],
        summary: "A provider's job callback (authenticated by the job's token)",
        params: Type.Object({ id: KeyString(64), provider: KeyString(32) }),
        response: { 200: Type.Object({ received: Type.Literal(true) }), ...errors(400, 404) },
      },
    },
    async (req) => {
      const { id, provider } = req.params;
      return deps.services.transcriptionJobs.callback(id, provider, req.body, req.headers);
    },
  );
}

/** How GET …/jobs/{id} answers: the job object (`json`, the default) or its transcript as text, SRT or WebVTT. */
export const JobFormatQuery = Type.Object({ response_format: Type.Optional(OneOf(['json', 'text', 'srt', 'vtt'] as const)) }, { additionalProperties: false });
export type JobFormat = NonNullable<Static<typeof JobFormatQuery>['response_format']>;

/** A job read for the account paying `walletId` (/v1 by key, /portal by session): the object, or its transcript rendered. */
export async function answerJobRead(
  deps: AppDeps,
  walletId: string,
  id: string,
  format: JobFormat | undefined,
  reply: FastifyReply,
): Promise<JobObject | undefined> {
  if (format === undefined || format === 'json') return deps.services.transcriptionJobs.get(walletId, id);
  const out = await deps.services.transcriptionJobs.render(walletId, id, format);
  reply.type(out.contentType).send(out.body);
  return undefined;
}

/**
 * A short clip (POST /v1/audio/transcriptions or /translations, and the dashboard's try-it) for
 * `principal`: the upload streamed into a blob, transcribed on the metered path, answered, deleted.
 */
export async function answerClip(
  deps: AppDeps,
  principal: ApiKeyPrincipal,
  endpoint: 'sync' | 'translations',
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const { blobs, transcription } = deps.services;
  const key = `uploads/${randomBytes(12).toString('hex')}`;
  try {
    const form = await readUpload(req, blobs, key);
    if (!form.file)
      throw new ApiError('invalid_request', `The field 'file' is required: the recording to ${endpoint === 'sync' ? 'transcribe' : 'translate'}.`, {
        param: 'file',
      });
    const fields = readFields(form.fields, endpoint);
    const out = await transcription.transcribe(principal, fields, form.file, req.id, cancelOnDisconnect(reply));
    return reply.type(out.contentType).send(out.body);
  } catch (err) {
    return uploadFailed(err, req, reply);
  } finally {
    await blobs.delete(key).catch(() => {});
  }
}

/** A new job (POST /v1/audio/transcriptions/jobs, and the dashboard's upload) for `principal`: 202 with the queued job. */
export async function answerNewJob(
  deps: AppDeps,
  principal: ApiKeyPrincipal,
  req: FastifyRequest,
  reply: FastifyReply,
  location = '/v1/audio/transcriptions/jobs',
): Promise<FastifyReply> {
  const { blobs, transcriptionJobs } = deps.services;
  const jobId = newJobId();
  const key = audioKeyOf(jobId);
  let accepted = false;
  try {
    const form = await readUpload(req, blobs, key);
    if (!form.file) throw new ApiError('invalid_request', "The field 'file' is required: the recording to transcribe.", { param: 'file' });
    const fields = readFields(form.fields, 'jobs');
    const job = await transcriptionJobs.create(principal, jobId, fields, form.file);
    accepted = true;
    return reply.code(202).header('location', `${location}/${jobId}`).send(job);
  } catch (err) {
    return uploadFailed(err, req, reply);
  } finally {
    if (!accepted) await blobs.delete(key).catch(() => {});
  }
}
