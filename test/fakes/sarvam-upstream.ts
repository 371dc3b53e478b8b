// A fake Sarvam AI upstream on loopback, speaking its wire format (sarvamai SDK 1.1.10, docs.sarvam.ai):
//   POST /speech-to-text — multipart `file`, `model`, `mode`, `language_code`, `with_timestamps`,
//     `keyterms` (repeated; saaras:v4 only, ≤ 50, as in a job's parameters, where it is a list);
//     ≤ 30 s of audio; → {request_id, transcript, timestamps, language_code, language_probability}
//   the batch job API:
//     POST /speech-to-text/job/v1 {job_parameters, callback?: {url, auth_token}} → {job_id, job_state}
//     POST /speech-to-text/job/v1/upload-files {job_id, files} → {upload_urls: {name: {file_url}}}
//     PUT  /blob/<job>/<name>?sv=…&sig=… (the "Azure" storage; needs `x-ms-blob-type: BlockBlob`) → 201
//     POST /speech-to-text/job/v1/<job>/start (needs the file uploaded)
//     GET  /speech-to-text/job/v1/<job>/status → job_state Accepted | Running | Completed | Failed, job_details
//     POST /speech-to-text/job/v1/download-files {job_id, files} → {download_urls: {name: {file_url}}}
//     GET  /blob/<job>/out/<name>?sig=… → the transcript, with diarized_transcript.entries when asked
//   and, when a job was created with a callback, a POST {job_id, job_state} to its URL with the
//   auth_token in `X-SARVAM-JOB-CALLBACK-TOKEN` once the job ends.
// Sarvam's checks: the key in `api-subscription-key` (403 invalid_api_key_error otherwise), Odia
// only as `od-IN` (`or-IN` is a 400), no `mode` for saarika models, ≤ 30 s on the REST endpoint.
// Errors are `{error: {message, code, request_id}}`. Programmable per request (FakeBehaviour), and
// per fake: `pollsUntilDone` (status polls a started job answers Running before it completes),
// `failNextJob` (the next created job fails, as a whole or its file), `callbackDelayMs`,
// `blobOrigin` (storage URLs on another origin). Records jobs (uploads counted) and callbacks.
import { randomUUID } from 'node:crypto';
import { deliverCallback, FakeServer, sendAnswer, sendJson, type CallbackSent, type Exchange } from './fake-server.ts';
import { audioSeconds, fakeSpeech, readForm } from './audio.ts';

export const SARVAM_LANGUAGE_CODES = [
  'unknown',
  'hi-IN',
  'bn-IN',
  'kn-IN',
  'ml-IN',
  'mr-IN',
  'od-IN',
  'pa-IN',
  'ta-IN',
  'te-IN',
  'en-IN',
  'gu-IN',
  'as-IN',
  'ur-IN',
  'ne-IN',
  'kok-IN',
  'ks-IN',
  'sd-IN',
  'sa-IN',
  'sat-IN',
  'mni-IN',
  'brx-IN',
  'mai-IN',
  'doi-IN',
];
const MODES = ['transcribe', 'translate', 'verbatim', 'translit', 'codemix'];
const CODES: Record<number, string> = {
  400: 'invalid_request_error',
  403: 'invalid_api_key_error',
  404: 'not_found_error',
  422: 'unprocessable_entity_error',
  429: 'rate_limit_exceeded_error',
};

export interface SarvamJob {
  id: string;
  state: 'Accepted' | 'Pending' | 'Running' | 'Completed' | 'Failed';
  parameters: Record<string, any>;
  callback: { url: string; auth_token?: string } | null;
  /** The uploaded file's name and bytes (the last upload), and how many uploads came. */
  file: { name: string; bytes: Buffer } | null;
  uploads: number;
  starts: number;
  polls: number;
  fail: { level: 'job' | 'file'; message: string } | null;
}

export interface SarvamUpstream extends FakeServer {
  jobs: Map<string, SarvamJob>;
  callbacks: CallbackSent[];
  pollsUntilDone: number;
  failNextJob: SarvamJob['fail'];
  callbackDelayMs: number;
  blobOrigin: string | null;
}

export async function startSarvamUpstream(opts: { apiKey?: string; models?: string[] } = {}): Promise<SarvamUpstream> {
  const models = opts.models ?? ['saaras:v3', 'saaras:v4', 'saarika:v2.5'];
  let self!: SarvamUpstream;
  const server = await FakeServer.start(async (x) => {
    const { rec, behaviour } = x;
    const fail = (status: number, message: string) =>
      sendJson(x.res, status, { error: { message, code: CODES[status] ?? 'internal_server_error', request_id: `req_${rec.at}` } });
    if (rec.path.startsWith('/blob/')) return blob(self, x);
    if (opts.apiKey !== undefined && rec.headers['api-subscription-key'] !== opts.apiKey) return fail(403, 'Invalid API key');
    if (behaviour.status) return fail(behaviour.status, behaviour.message ?? `fake failure ${behaviour.status}`);
    const invalid = (p: Record<string, any>) => parametersProblem(p, models);
    if (rec.method === 'POST' && rec.path === '/speech-to-text') return restTranscribe(x, fail, invalid);
    if (rec.method === 'POST' && rec.path === '/speech-to-text/job/v1') {
      const p = rec.body?.job_parameters;
      const problem = typeof p === 'object' && p !== null ? invalid(p) : 'job_parameters is required';
      if (problem) return fail(400, problem);
      const job: SarvamJob = {
        id: randomUUID(),
        state: 'Accepted',
        parameters: p,
        callback: rec.body.callback ?? null,
        file: null,
        uploads: 0,
        starts: 0,
        polls: 0,
        fail: self.failNextJob,
      };
      self.failNextJob = null;
      self.jobs.set(job.id, job);
      return sendAnswer(x, { job_id: job.id, job_state: job.state, job_parameters: p, storage_container_type: 'Azure' });
    }
    const job = self.jobs.get(rec.body?.job_id ?? /\/job\/v1\/([^/]+)\//.exec(rec.path)?.[1] ?? '');
    if (!job) return fail(404, 'Job not found');
    const blobUrl = (path: string) => `${self.blobOrigin ?? self.url}/blob/${job.id}/${path}?sv=2024-08-04&sig=SECRETSIGNATURE`;
    if (rec.method === 'POST' && rec.path === '/speech-to-text/job/v1/upload-files') {
      const names: string[] = rec.body.files ?? [];
      return sendAnswer(x, {
        job_id: job.id,
        job_state: job.state,
        upload_urls: Object.fromEntries(names.map((n) => [n, { file_url: blobUrl(n), file_metadata: null }])),
        storage_container_type: 'Azure',
      });
    }
    if (rec.method === 'POST' && rec.path === `/speech-to-text/job/v1/${job.id}/start`) {
      if (!job.file) return fail(400, 'No files uploaded for this job');
      job.starts += 1;
      job.state = 'Running';
      if (job.callback) setTimeout(() => void finish(self, job), self.callbackDelayMs).unref();
      return sendAnswer(x, status(job));
    }
    if (rec.method === 'GET' && rec.path === `/speech-to-text/job/v1/${job.id}/status`) {
      if (job.state !== 'Accepted') job.polls += 1; // a status check before start is not a poll of a started job
      if (job.state === 'Running' && job.polls >= self.pollsUntilDone) end(job);
      return sendAnswer(x, status(job));
    }
    if (rec.method === 'POST' && rec.path === '/speech-to-text/job/v1/download-files') {
      if (job.state !== 'Completed') return fail(400, 'Job is not completed');
      const names: string[] = rec.body.files ?? [];
      return sendAnswer(x, {
        job_id: job.id,
        job_state: job.state,
        download_urls: Object.fromEntries(names.map((n) => [n, { file_url: blobUrl(`out/${n}`) }])),
        storage_container_type: 'Azure',
      });
    }
    return fail(404, 'Not Found');
  });
  self = Object.assign(server, { jobs: new Map(), callbacks: [], pollsUntilDone: 1, failNextJob: null, callbackDelayMs: 20, blobOrigin: null });
  return self;
}

function parametersProblem(p: Record<string, any>, models: string[]): string | null {
  if (!models.includes(p.model)) return `Invalid model: ${p.model}`;
  if (p.mode !== undefined && /^saarika/.test(p.model)) return `mode is not supported for model ${p.model}`;
  if (p.mode !== undefined && !MODES.includes(p.mode)) return `Invalid mode: ${p.mode}`;
  if (p.language_code !== undefined && !SARVAM_LANGUAGE_CODES.includes(p.language_code)) return `Invalid language_code: ${p.language_code}`;
  if (p.keyterms !== undefined) {
    if (p.model !== 'saaras:v4') return `keyterms is only supported for saaras:v4, not ${p.model}`;
    if (!Array.isArray(p.keyterms) || !p.keyterms.every((t: unknown) => typeof t === 'string')) return 'keyterms must be a list of strings';
    if (p.keyterms.length > 50) return 'keyterms must have at most 50 items';
  }
  if (p.num_speakers !== undefined && !(Number.isInteger(p.num_speakers) && p.num_speakers >= 1 && p.num_speakers <= 20))
    return 'num_speakers must be between 1 and 20';
  return null;
}

/** The transcript Sarvam answers (REST) or writes (job output) for `audio`. */
function transcriptOf(audio: Buffer, p: Record<string, any>, withTimestamps: boolean) {
  const speech = fakeSpeech(audio, p.num_speakers ?? 2);
  const say = (t: string) => (p.mode === 'translate' ? `translated ${t}` : t);
  return {
    request_id: randomUUID(),
    transcript: speech.turns.map((t) => say(t.text)).join(' '),
    timestamps: withTimestamps
      ? { words: speech.turns.map((t) => say(t.text)), start_time_seconds: speech.turns.map((t) => t.start), end_time_seconds: speech.turns.map((t) => t.end) }
      : null,
    diarized_transcript: p.with_diarization
      ? {
          entries: speech.turns.map((t) => ({
            transcript: say(t.text),
            start_time_seconds: t.start,
            end_time_seconds: t.end,
            speaker_id: `SPEAKER_${String(t.speaker).padStart(2, '0')}`,
          })),
        }
      : null,
    language_code: p.language_code === undefined || p.language_code === 'unknown' ? 'hi-IN' : p.language_code,
    language_probability: 0.93,
  };
}

async function restTranscribe(x: Exchange, fail: (s: number, m: string) => void, invalid: (p: Record<string, any>) => string | null): Promise<void> {
  const form = await readForm(x.rec.raw, x.rec.headers['content-type']);
  if (!form?.file) return fail(400, 'file is required');
  const p = Object.fromEntries([...form.fields].map(([k, v]) => [k, k === 'keyterms' ? v : v[0]]));
  const problem = invalid(p);
  if (problem) return fail(400, problem);
  if (audioSeconds(form.file.bytes) > 30) return fail(400, 'Audio duration exceeds the maximum limit of 30 seconds. Use the batch API for longer audio.');
  const { diarized_transcript: _none, ...answer } = transcriptOf(form.file.bytes, p, p.with_timestamps === 'true');
  sendAnswer(x, answer);
}

function status(job: SarvamJob) {
  const done = job.state === 'Completed' || job.state === 'Failed';
  const fileFailed = job.fail?.level === 'file';
  return {
    job_id: job.id,
    job_state: job.state,
    created_at: '2026-11-25T10:00:00Z',
    updated_at: '2026-11-25T10:00:05Z',
    storage_container_type: 'Azure',
    total_files: 1,
    successful_files_count: done && !job.fail ? 1 : 0,
    failed_files_count: done && job.fail ? 1 : 0,
    error_message: job.state === 'Failed' ? job.fail!.message : '',
    job_details: done
      ? [
          {
            inputs: [{ file_name: job.file!.name, file_id: '0' }],
            outputs: fileFailed ? [] : [{ file_name: '0.json', file_id: '0' }],
            state: fileFailed ? 'API Error' : 'Success',
            error_message: fileFailed ? job.fail!.message : '',
          },
        ]
      : [],
  };
}

function end(job: SarvamJob): void {
  job.state = job.fail?.level === 'job' ? 'Failed' : 'Completed';
}

function finish(self: SarvamUpstream, job: SarvamJob): Promise<void> {
  end(job);
  const token: Record<string, string> = job.callback!.auth_token ? { 'X-SARVAM-JOB-CALLBACK-TOKEN': job.callback!.auth_token } : {};
  return deliverCallback(self.callbacks, job.callback!.url, token, { job_id: job.id, job_state: job.state });
}

/** The storage: a PUT stores a job's file, a GET reads a finished job's output. */
function blob(self: SarvamUpstream, x: Exchange): void {
  const { rec } = x;
  const m = /^\/blob\/([^/]+)\/(out\/)?([^/]+)$/.exec(rec.path);
  const job = m ? self.jobs.get(m[1]!) : undefined;
  const xml = (status: number, code: string) => {
    x.res.writeHead(status, { 'content-type': 'application/xml' });
    x.res.end(`<?xml version="1.0" encoding="utf-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`);
  };
  if (!m || !job || !new URL(x.req.url ?? '', 'http://x').searchParams.get('sig')) return xml(403, 'AuthenticationFailed');
  if (x.behaviour.status) return xml(x.behaviour.status, 'ServerBusy');
  if (rec.method === 'PUT' && !m[2]) {
    if (rec.headers['x-ms-blob-type'] !== 'BlockBlob') return xml(400, 'MissingRequiredHeader');
    job.file = { name: decodeURIComponent(m[3]!), bytes: rec.raw };
    job.uploads += 1;
    x.res.writeHead(201, { 'content-length': '0' });
    x.res.end();
    return;
  }
  if (rec.method === 'GET' && m[2] && job.state === 'Completed')
    return sendAnswer(x, transcriptOf(job.file!.bytes, job.parameters, job.parameters.with_timestamps === true));
  xml(404, 'BlobNotFound');
}
