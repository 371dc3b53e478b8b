// Transcription jobs: POST /v1/audio/transcriptions/jobs creates one, GET reads one or lists them.
// The path of a job:
//   upload → blob `jobs/<id>/audio` (fsynced: durable before the client hears of the job)
//   → probe (the estimate's duration) → Meter.begin (model of type stt with jobs, its modes,
//     languages and diarization; a hold that lives as long as a job may) → spawn the actor
//     (src/transcription/kind.ts) → `{id, status: "queued"}`
// The actor does the rest (submit or transcribe, poll, store, charge once, notify). What a client
// reads comes from the actor's projection (status; listed by account without opening snapshots)
// and, once completed, from the stored transcript.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { ActorRef, ActorRuntime } from '../actors/runtime.ts';
import type { ActorView } from '../actors/record.ts';
import type { BlobStore, Upload } from '../blobs/port.ts';
import { ApiError } from '../errors.ts';
import type { Meter } from '../metering/meter.ts';
import type { ModelDoc } from '../models/types.ts';
import type { CallbackHeaders, Provider } from '../providers/types.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';
import type { Transcript } from '../speech/transcript.ts';
import { AudioDecodeError, probeAudio } from '../speech/ffmpeg.ts';
import { contentTypeOf, examineAudio } from './audio.ts';
import { checkAgainstModel, type TranscriptionFields } from './request.ts';
import { priceOfSeconds } from '../billing/pricing.ts';
import { renderTranscript, type Rendered } from '../speech/formats.ts';
import { JOB_KIND, readJson, type JobKind, type JobSpecFields } from './kind.ts';
import type { TranscriptionJobContext } from '../../machines/transcription-job.machine.ts';

export type JobStatus = 'queued' | 'processing' | 'completed' | 'failed';

export interface JobObject {
  id: string;
  object: 'transcription.job';
  status: JobStatus;
  model: string;
  created_at: number;
  completed_at?: number | null;
  language?: string;
  duration?: number;
  text?: string;
  segments?: { speaker: string; start: number; end: number; text: string }[];
  error?: { code: string; message: string };
}

export interface JobsDeps {
  /** The providers, for their callbacks' formats; and each job's callback token. */
  providers: ReadonlyMap<string, Provider>;
  callbackToken(jobId: string): string;
  blobs: BlobStore;
  meter: Meter;
  runtime: Pick<ActorRuntime, 'ref' | 'list' | 'get'>;
  kind: JobKind;
  resolveRoutes(model: ModelDoc): unknown[];
  now(): number;
  holdTtlMs: number;
  /** The longest recording a job takes (decoded seconds). */
  maxAudioSeconds: number;
}

/** Estimates carry this margin over the container's declared duration (it is a claim, not a measure). */
const ESTIMATE_MARGIN = 1.05;

export const newJobId = (): string => `txjob_${randomBytes(12).toString('hex')}`;
export const audioKeyOf = (jobId: string): string => `jobs/${jobId}/audio`;

export class TranscriptionJobs {
  constructor(private readonly deps: JobsDeps) {}

  private ref(id: string): ActorRef<JobKind> {
    return this.deps.runtime.ref(this.deps.kind, id);
  }

  /** The upload is already stored at `audioKeyOf(jobId)`; on any refusal the caller deletes it. */
  async create(
    principal: ApiKeyPrincipal,
    jobId: string,
    fields: TranscriptionFields,
    upload: Upload,
  ): Promise<{ id: string; object: 'transcription.job'; status: 'queued'; created_at: number }> {
    const { blobs, meter } = this.deps;
    const probed = await blobs.withFile(upload.key, async (path) => {
      try {
        const probe = await probeAudio({ path });
        // A container without a duration is decoded to measure it (the estimate needs one), no
        // further than a job takes; the measure is exact, so the job keeps it rather than decoding again.
        const measured = probe.duration === null ? (await examineAudio(path, { maxSeconds: this.deps.maxAudioSeconds })).durationS : undefined;
        return { seconds: measured ?? probe.duration!, measured, contentType: contentTypeOf(probe.container) };
      } catch (err) {
        if (err instanceof AudioDecodeError) {
          throw new ApiError('invalid_audio', `The file could not be decoded as audio (${err.message}). Send wav, mp3, ogg/opus, flac, m4a/aac or webm.`, {
            param: 'file',
          });
        }
        throw err;
      }
    });
    if (probed === null) throw new ApiError('invalid_request', "The field 'file' is required.", { param: 'file' });
    if (probed.seconds > this.deps.maxAudioSeconds) {
      throw new ApiError(
        'audio_too_long',
        `The recording is ${Math.round(probed.seconds)} s long; a job takes at most ${this.deps.maxAudioSeconds} s (${this.deps.maxAudioSeconds / 60} minutes).`,
        { param: 'file' },
      );
    }
    const estimateSeconds = Math.ceil(probed.seconds * ESTIMATE_MARGIN) + 1;
    const call = await meter.begin(principal, {
      model: fields.model,
      type: 'stt',
      requestId: jobId,
      check: (model) => checkAgainstModel(model, fields, 'jobs'),
      estimate: (model) => priceOfSeconds(model.pricing, estimateSeconds),
      holdTtlMs: this.deps.holdTtlMs,
      custodial: true,
    });
    const createdAt = this.deps.now();
    const spec: JobSpecFields = {
      model: call.model._id,
      audioKey: upload.key,
      filename: upload.filename,
      contentType: probed.contentType,
      bytes: upload.bytes,
      mode: fields.mode,
      diarize: fields.diarize,
      payer: call.payer,
      hold: call.hold,
      requestId: jobId,
      startedAt: createdAt,
    };
    if (call.checked !== undefined) spec.language = call.checked;
    if (fields.prompt !== undefined) spec.prompt = fields.prompt;
    if (fields.keyTerms !== undefined) spec.keyTerms = fields.keyTerms;
    if (fields.numSpeakers !== undefined) spec.numSpeakers = fields.numSpeakers;
    if (probed.measured !== undefined) spec.durationS = probed.measured;
    try {
      await this.ref(jobId).spawn({
        jobId,
        account: call.payer.walletId,
        model: call.model._id,
        createdAt,
        spec,
      });
    } catch (err) {
      await call.release('error', { seconds: 0 });
      throw err;
    }
    return { id: jobId, object: 'transcription.job', status: 'queued', created_at: Math.floor(createdAt / 1000) };
  }

  /**
   * A provider's callback about job `jobId`: believed only with the job's token (compared in
   * constant time; anything else is 404, as an unknown job is). A carried transcript is stored
   * before the job hears of it; the job hears through the runtime, whichever instance holds it.
   */
  async callback(jobId: string, providerName: string, body: unknown, headers: CallbackHeaders): Promise<{ received: true }> {
    const notFound = () => new ApiError('not_found', 'No such callback.');
    const jobs = this.deps.providers.get(providerName)?.transcriptionJobs;
    if (!jobs?.parseCallback || !/^txjob_[0-9a-f]{24}$/.test(jobId)) throw notFound();
    const parsed = jobs.parseCallback(body, headers);
    if (!parsed) throw new ApiError('invalid_request', 'Not a callback this provider sends.');
    const expected = Buffer.from(this.deps.callbackToken(jobId));
    const given = Buffer.from(parsed.token ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw notFound();
    const event: { type: 'provider.callback'; providerJobId: string; rawKey?: string; error?: { code: string; message: string } } = {
      type: 'provider.callback',
      providerJobId: parsed.providerJobId,
    };
    if (parsed.result?.state === 'completed') {
      const key = `jobs/${jobId}/callback.json`;
      await this.deps.blobs.put(key, Buffer.from(JSON.stringify(parsed.result.transcript)));
      event.rawKey = key;
    } else if (parsed.result?.state === 'failed') {
      event.error = { code: 'upstream_error', message: parsed.result.message || 'The provider could not transcribe the recording.' };
    }
    await this.ref(jobId)
      .send(event, { wait: 'accepted' })
      .catch((err: unknown) => {
        if ((err as { code?: string }).code === 'not_found') throw notFound();
        throw err;
      });
    return { received: true };
  }

  /**
   * The caller's job (another account's, or none: 404 either way). `transcript: false` leaves out a
   * completed job's text and segments (see list).
   */
  async get(account: string, id: string, transcript = true): Promise<JobObject> {
    const view = await this.view(account, id);
    return this.toObject(view, transcript);
  }

  /**
   * The caller's completed job's transcript in a subtitle or text format (`renderTranscript`, the
   * sync endpoint's own: the same cues, timestamps and lines); 409 `job_not_completed` before then.
   */
  async render(account: string, id: string, format: 'text' | 'srt' | 'vtt'): Promise<Rendered> {
    const view = await this.view(account, id);
    const c = facts(view)!;
    const t = c.result ? await readJson<Transcript>(this.deps.blobs, c.result.resultKey).catch(() => null) : null;
    if (!t) {
      const status = statusOf(view.value);
      const why = status === 'failed' ? 'it failed' : `it is ${status}; wait for status completed`;
      throw new ApiError('job_not_completed', `The job '${id}' has no transcript: ${why}.`, { param: 'response_format' });
    }
    return renderTranscript(t, { format });
  }

  /** Where the caller's job's recording is, and its type (another account's, or gone: 404). */
  async recording(account: string, id: string): Promise<{ key: string; contentType: string }> {
    const { spec } = facts(await this.view(account, id))!;
    return { key: spec.audioKey, contentType: spec.contentType };
  }

  /**
   * The account's jobs, newest first. `transcripts: false` leaves out each completed job's text and
   * segments (the dashboard's list, polled every few seconds, shows neither: a page of four-hour
   * transcripts is megabytes read from the blob store each time).
   */
  async list(
    account: string,
    opts: { limit: number; after?: string; status?: JobStatus; transcripts?: boolean },
  ): Promise<{ object: 'list'; data: JobObject[]; has_more: boolean; first_id: string | null; last_id: string | null }> {
    const where: Record<string, unknown> = { account };
    if (opts.status) where.status = opts.status;
    if (opts.after) {
      const cursor = await this.view(account, opts.after).catch(() => {
        throw new ApiError('invalid_request', `Unknown job '${opts.after}' in 'after'.`, { param: 'after' });
      });
      where.order = { $lt: orderOf(cursor) };
    }
    const rows = await this.deps.runtime.list(JOB_KIND, where, { sort: { order: -1 }, limit: opts.limit + 1 });
    const page = rows.slice(0, opts.limit);
    const data = await Promise.all(page.map((r) => this.get(account, r.id, opts.transcripts ?? true)));
    return { object: 'list', data, has_more: rows.length > opts.limit, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  }

  private async view(account: string, id: string): Promise<ActorView> {
    const notFound = () => new ApiError('not_found', `No transcription job '${id}'.`, { param: 'id' });
    if (!/^txjob_[0-9a-f]{24}$/.test(id)) throw notFound();
    const view = await this.ref(id)
      .get()
      .catch(() => null);
    if (!view || facts(view)?.account !== account) throw notFound();
    return view;
  }

  private async toObject(view: ActorView, transcript = true): Promise<JobObject> {
    const c = facts(view)!;
    const status = statusOf(view.value);
    const out: JobObject = { id: c.jobId, object: 'transcription.job', status, model: c.model, created_at: Math.floor(c.createdAt / 1000) };
    if (status === 'completed' && c.result) {
      const t = transcript ? await readJson<Transcript>(this.deps.blobs, c.result.resultKey).catch(() => null) : null;
      out.completed_at = c.finishedAt !== null ? Math.floor(c.finishedAt / 1000) : null;
      out.language = c.result.language ?? 'und';
      out.duration = c.result.duration;
      if (t) {
        out.text = t.text;
        out.segments = t.segments.map((s) => ({ speaker: s.speaker ?? 'SPEAKER_00', start: s.start, end: s.end, text: s.text }));
      }
    }
    if (status === 'failed') {
      out.completed_at = c.finishedAt !== null ? Math.floor(c.finishedAt / 1000) : null;
      out.error = c.error ?? { code: 'transcription_failed', message: 'The transcription failed.' };
    }
    return out;
  }
}

/** The spec's four statuses from the machine's state (its `failing` step still counts as processing). */
export function statusOf(value: unknown): JobStatus {
  if (value === null || value === 'queued') return 'queued';
  if (value === 'completed') return 'completed';
  if (value === 'failed') return 'failed';
  return 'processing';
}

/** The job's context, or (queued, not run yet) the input it will start from, which has the same ids. */
function facts(view: ActorView): TranscriptionJobContext<JobSpecFields> | null {
  const c = (view.context ?? view.input ?? null) as Partial<TranscriptionJobContext<JobSpecFields>> | null;
  if (!c || typeof c.jobId !== 'string') return null;
  return { result: null, error: null, finishedAt: null, ...c } as TranscriptionJobContext<JobSpecFields>;
}

function orderOf(view: ActorView): string {
  const c = facts(view)!;
  return `${String(c.createdAt).padStart(15, '0')}:${c.jobId}`;
}
