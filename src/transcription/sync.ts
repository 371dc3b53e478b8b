// POST /v1/audio/transcriptions (and /v1/audio/translations, mode translate): the metered path of a
// short clip (about 30 s at most), billed as transcription.
//   upload (already in the blob store) → probe and decode (exact duration) → Meter.begin (model of
//   type stt, its modes and languages, hold the duration's price) → router.transcribe (failover)
//   → settle by the decoded seconds, or release when nothing was transcribed → render.
//   The offline engine (`local`) is handed the PCM decoded for the duration, so the upload is decoded
//   once and the seconds billed are those the engine heard.
import type { BlobStore, Upload } from '../blobs/port.ts';
import { ApiError } from '../errors.ts';
import { priceOfSeconds } from '../billing/pricing.ts';
import { transcriptForClient } from './result.ts';
import { checkAgainstModel, type TranscriptionFields } from './request.ts';
import { examineAudio } from './audio.ts';
import { renderTranscript, type Rendered } from '../speech/formats.ts';
import { sttFeatures } from '../models/catalog.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';
import type { GatewayDeps } from '../metering/endpoints.ts';
import { toApiError, unservedStatus } from '../metering/outcomes.ts';
import type { CancelSignal } from '../providers/cancel.ts';
import type { TranscribeRequest } from '../providers/types.ts';
import { IN_PROCESS_PROVIDERS } from '../providers/index.ts';
import { contextOf } from '../shared/recognition-context.ts';

/** The spec's "about 30 seconds": a clip up to 30.5 s is taken (encoders pad). */
export const SYNC_LIMIT_SECONDS = 30.5;

export class SyncTranscription {
  constructor(private readonly deps: GatewayDeps & { blobs: BlobStore }) {}

  async transcribe(principal: ApiKeyPrincipal, fields: TranscriptionFields, upload: Upload, requestId: string, signal: CancelSignal): Promise<Rendered> {
    const done = await this.deps.blobs.withFile(upload.key, (path) => this.run(principal, fields, upload, path, requestId, signal));
    if (!done) throw new ApiError('invalid_request', "The field 'file' is required.", { param: 'file' });
    return done;
  }

  private async run(
    principal: ApiKeyPrincipal,
    fields: TranscriptionFields,
    upload: Upload,
    path: string,
    requestId: string,
    signal: CancelSignal,
  ): Promise<Rendered> {
    const { meter, router } = this.deps;
    // Decoded once, here: the PCM is kept (31.5 s at most, about 1 MB) for an engine in this process.
    const audio = await examineAudio(path, { maxSeconds: SYNC_LIMIT_SECONDS, keepPcm: true });
    if (audio.durationS > SYNC_LIMIT_SECONDS) {
      throw new ApiError(
        'audio_too_long',
        `The audio is longer than ${Math.floor(SYNC_LIMIT_SECONDS)} seconds, the limit of this endpoint; send long recordings to POST /v1/audio/transcriptions/jobs.`,
        { param: 'file' },
      );
    }
    const seconds = Math.ceil(audio.durationS - 1e-9);
    const call = await meter.begin(principal, {
      model: fields.model,
      type: 'stt',
      requestId,
      check: (model) => checkAgainstModel(model, fields, 'sync'),
      estimate: (model) => priceOfSeconds(model.pricing, seconds),
    });
    const { model, checked: language } = call;
    // Only an engine in this process takes the PCM; a model routed to upstreams alone lets it go
    // rather than hold it through their calls.
    const pcm = model.routes.some((r) => IN_PROCESS_PROVIDERS.includes(r.provider)) ? audio.pcm : undefined;
    delete audio.pcm;
    const req: TranscribeRequest = {
      audio: { path, filename: upload.filename, contentType: audio.contentType, bytes: upload.bytes, durationS: audio.durationS, ...(pcm ? { pcm } : {}) },
      mode: fields.mode,
      timestamps: fields.granularities.length > 0 ? fields.granularities : ['segment'],
    };
    if (language !== undefined) req.language = language;
    const context = contextOf({ prompt: fields.prompt, keyTerms: fields.keyTerms });
    if (context) req.context = context;
    if (fields.temperature !== undefined) req.temperature = fields.temperature;
    let served;
    try {
      served = await router.transcribe(this.deps.resolveRoutes(model), req, signal);
    } catch (err) {
      await call.release(unservedStatus(err, signal), { seconds: 0 });
      const api = toApiError(err);
      // On the translations endpoint no `mode` was sent: a route that cannot translate is the model's doing.
      if (fields.translation && api instanceof ApiError && api.options.param === 'mode') throw new ApiError(api.code, api.message, { param: 'model' });
      throw api;
    }
    await call.settle({ route: served.route.id, seconds, costMicrocents: priceOfSeconds(model.pricing, seconds), status: 'ok' }, { answer: true });
    const transcript = transcriptForClient(served.result, {
      durationS: audio.durationS,
      language: language ?? model.languages?.[0] ?? null,
      diarized: false,
      decoder: fields.responseFormat === 'verbose_json',
    });
    const timestamps = sttFeatures(model).timestamps !== 'none';
    if (fields.responseFormat === 'json') {
      // The spec's synchronous transcript (BCP-47 language, duration, segments when the model gives
      // timestamps), with OpenAI's `usage` too.
      const body = {
        text: transcript.text,
        language: transcript.language,
        duration: transcript.duration,
        ...(timestamps ? { segments: transcript.segments.map((s, id) => ({ id, start: s.start, end: s.end, text: s.text.trim() })) } : {}),
        usage: { type: 'duration' as const, seconds },
      };
      return { contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) };
    }
    return renderTranscript(transcript, {
      format: fields.responseFormat,
      granularities: fields.granularities,
      ...(fields.temperature !== undefined ? { temperature: fields.temperature } : {}),
      task: fields.mode === 'translate' ? 'translate' : 'transcribe',
    });
  }
}
