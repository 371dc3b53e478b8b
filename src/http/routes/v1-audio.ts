// POST /v1/audio/transcriptions (OpenAI-compatible, multipart): the upload is streamed into the blob
// store, the fields read, then src/transcription/sync.ts meters and transcribes it. The uploaded
// file is deleted when the answer is sent, whatever it was.
import { randomBytes } from 'node:crypto';
import type { App, AppDeps } from '../app.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { acceptUploads, readUpload, sendTooLarge, UploadTooLargeError } from '../uploads.ts';
import { ApiError } from '../../errors.ts';
import { readFields } from '../../transcription/request.ts';
import { cancelOnDisconnect } from '../../providers/cancel.ts';

export function registerAudioRoutes(app: App, deps: AppDeps): void {
  app.register(async (child) => {
    const scope = child as unknown as App;
    await acceptUploads(scope);
    scope.post(
      '/v1/audio/transcriptions',
      {
        preHandler: requireApiKey(deps, 'audio'),
        schema: { tags: ['v1'], summary: 'Transcribe a short clip (Whisper-compatible; multipart)', security: [{ apiKey: [] }], consumes: ['multipart/form-data'] },
      },
      async (req, reply) => {
        const { blobs, transcription } = deps.services;
        const key = `uploads/${randomBytes(12).toString('hex')}`;
        try {
          const form = await readUpload(req, blobs, key);
          if (!form.file) throw new ApiError('invalid_request', "The field 'file' is required: the recording to transcribe.", { param: 'file' });
          const fields = readFields(form.fields, 'sync');
          const out = await transcription.transcribe(principalOf(req), fields, form.file, req.id, cancelOnDisconnect(reply.raw));
          return reply.type(out.contentType).send(out.body);
        } catch (err) {
          if (err instanceof UploadTooLargeError) return sendTooLarge(reply);
          // A body refused before it was read to its end: the connection cannot carry another request.
          if (!req.raw.readableEnded) reply.header('connection', 'close');
          throw err;
        } finally {
          await blobs.delete(key).catch(() => {});
        }
      },
    );
  });
}
