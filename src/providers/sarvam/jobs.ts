// Sarvam's batch job API (paths from the SDK's speechToTextJob client), the only place Sarvam
// diarizes. `submit` runs the first three steps:
//   1. POST /speech-to-text/job/v1 {job_parameters: {model, mode, language_code, with_timestamps,
//      with_diarization, num_speakers, keyterms (saaras:v4: the context's key terms)}, callback?: {url, auth_token}} → {job_id, job_state}
//   2. POST /speech-to-text/job/v1/upload-files {job_id, files: [name]} → upload_urls[name].file_url,
//      then PUT the audio there with `x-ms-blob-type: BlockBlob` (an Azure blob SAS URL: the key is
//      not sent to it, and handedOutUrl must accept it: the route's origin, or public https)
//   3. POST /speech-to-text/job/v1/{job_id}/start
// and answers the job id. It is also offered in two halves, `create` (step 1: the job id, nothing
// processed) and `start` (steps 2–3, skipped when the job's status says it already started), so
// the job actor records the id before the audio goes up: a replay after a crash starts the same
// job at most once (it may upload the file again to a job that has not started; nothing is
// processed twice).
// `poll`: GET /speech-to-text/job/v1/{job_id}/status → job_state Accepted | Pending | Running
// (pending), Failed (failed, with error_message), Completed: the file's own state must be
// `Success`, then 5. POST /speech-to-text/job/v1/download-files {job_id, files: [output name]} →
// download_urls[name].file_url, GET it (checked as the upload URL) → the transcript JSON, with
// `diarized_transcript.entries[]` as segments (speakers as Sarvam labels them: SPEAKER_00…).
// The callback: Sarvam POSTs {job_id, job_state} with the auth_token in the
// `X-SARVAM-JOB-CALLBACK-TOKEN` header; it carries no result, so the caller polls.
import { scrub } from '../upstream-errors.ts';
import { uploadName } from '../transcript.ts';
import { handedOutUrl, type UpstreamFiles } from '../upload.ts';
import { isObject, protocolError, type Json } from '../validate.ts';
import type { CancelSignal } from '../cancel.ts';
import type { CallbackHeaders, ParsedCallback, ResolvedRoute, TranscriptionJobCapability } from '../types.ts';
import { sarvamCall } from './call.ts';
import { parseSarvamTranscript, sarvamKeyterms, sarvamParameters, sarvamRefuses } from './transcribe.ts';

const JOBS = '/speech-to-text/job/v1';
export const SARVAM_CALLBACK_TOKEN_HEADER = 'x-sarvam-job-callback-token';

export function sarvamJobs(files: UpstreamFiles): TranscriptionJobCapability {
  const post = (route: ResolvedRoute, path: string, value: unknown, signal: CancelSignal) =>
    files.json(sarvamCall(route, 'POST', path, { type: 'json', value }, signal));

  const capability: TranscriptionJobCapability = {
    refuses: sarvamRefuses,

    async submit(route, req, signal, callback) {
      const created = await capability.create!(route, req, signal, callback);
      await capability.start!(route, created.providerJobId, req, signal);
      return created;
    },

    async create(route, req, signal, callback) {
      const parameters: Json = { model: route.upstreamModel, ...Object.fromEntries(sarvamParameters(route, req)), with_timestamps: true };
      parameters.with_diarization = req.diarize === true;
      const keyterms = sarvamKeyterms(route, req);
      if (keyterms) parameters.keyterms = keyterms;
      if (req.diarize === true && req.numSpeakers !== undefined) parameters.num_speakers = req.numSpeakers;
      const created = await post(
        route,
        JOBS,
        { job_parameters: parameters, ...(callback ? { callback: { url: callback.url, auth_token: callback.token } } : {}) },
        signal,
      );
      return { providerJobId: jobIdOf(route.id, isObject(created) ? created.job_id : undefined) };
    },

    async start(route, jobId, req, signal) {
      // Started already (a replay after a crash between `start` and the caller's record): leave it.
      const status = await files.json(sarvamCall(route, 'GET', `${JOBS}/${encodeURIComponent(jobId)}/status`, { type: 'none' }, signal));
      if (isObject(status) && status.job_state !== 'Accepted') return;
      const name = uploadName(req.audio);
      const upload = await post(route, `${JOBS}/upload-files`, { job_id: jobId, files: [name] }, signal);
      const target = fileUrlOf(route, isObject(upload) ? upload.upload_urls : undefined, name);
      await files.send({
        routeId: route.id,
        url: target,
        headers: { 'x-ms-blob-type': 'BlockBlob' },
        timeoutMs: route.timeoutMs,
        signal,
        secrets: [route.apiKey],
        method: 'PUT',
        payload: { type: 'file', path: req.audio.path, contentType: req.audio.contentType, data: req.audio.data },
      });
      await post(route, `${JOBS}/${jobId}/start`, {}, signal);
    },

    async poll(route, providerJobId, signal) {
      const status = await files.json(sarvamCall(route, 'GET', `${JOBS}/${encodeURIComponent(providerJobId)}/status`, { type: 'none' }, signal));
      if (!isObject(status)) throw protocolError(route.id, 'the job status is not an object');
      switch (status.job_state) {
        case 'Accepted':
        case 'Pending':
        case 'Running':
          return { state: 'pending' };
        case 'Failed':
          return { state: 'failed', message: messageOf(route, status.error_message) };
        case 'Completed':
          break;
        default:
          throw protocolError(route.id, 'the job state is unknown');
      }
      const file = Array.isArray(status.job_details) ? status.job_details[0] : undefined;
      if (!isObject(file)) throw protocolError(route.id, 'a completed job has no file details');
      if (file.state !== 'Success') return { state: 'failed', message: messageOf(route, file.error_message || status.error_message) };
      const output = Array.isArray(file.outputs) ? file.outputs[0] : undefined;
      const name = isObject(output) && typeof output.file_name === 'string' ? output.file_name : null;
      if (!name) throw protocolError(route.id, 'a completed job names no output');
      const download = await post(route, `${JOBS}/download-files`, { job_id: providerJobId, files: [name] }, signal);
      const url = fileUrlOf(route, isObject(download) ? download.download_urls : undefined, name);
      const json = await files.json({
        routeId: route.id,
        url,
        headers: {},
        timeoutMs: route.timeoutMs,
        signal,
        secrets: [route.apiKey],
        method: 'GET',
        payload: { type: 'none' },
      });
      // The status does not repeat the job's mode: the language is the one the output names.
      return { state: 'completed', transcript: parseSarvamTranscript(route.id, { mode: 'transcribe' }, json) };
    },

    parseCallback: parseSarvamCallback,
  };
  return capability;
}

export function parseSarvamCallback(body: unknown, headers: CallbackHeaders): ParsedCallback | null {
  if (!isObject(body) || typeof body.job_id !== 'string' || body.job_id.length === 0 || body.job_id.length > 256) return null;
  const token = headers[SARVAM_CALLBACK_TOKEN_HEADER];
  return { providerJobId: body.job_id, token: typeof token === 'string' ? token : null };
}

function jobIdOf(routeId: string, v: unknown): string {
  if (typeof v !== 'string' || !/^[A-Za-z0-9_-]{1,128}$/.test(v)) throw protocolError(routeId, 'the job has no usable id');
  return v;
}

function fileUrlOf(route: ResolvedRoute, urls: unknown, name: string): URL {
  const entry = isObject(urls) ? urls[name] : undefined;
  const url = handedOutUrl(route.baseUrl, isObject(entry) ? entry.file_url : undefined);
  if (!url) throw protocolError(route.id, "no usable file URL (it must be https, or on the route's own origin)");
  return url;
}

/** Sarvam's reason for a failed job, made fit for the client (scrubbed of URLs and the key). */
function messageOf(route: ResolvedRoute, v: unknown): string {
  const said = typeof v === 'string' ? scrub(v, [route.apiKey]) : '';
  return said || 'the provider failed the job';
}
