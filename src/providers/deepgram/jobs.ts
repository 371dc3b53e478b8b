// Deepgram's asynchronous pre-recorded transcription: the same `POST /v1/listen` with
// `callback=<url>` and `extra=callback_secret:<token>` (Deepgram's documented way to authenticate
// a callback: it returns the pair in the callback body's `metadata.extra`); Deepgram answers
// `{request_id}` at once and later POSTs the whole result to the URL (retrying non-2xx answers).
// Deepgram has no job status to poll: `poll` answers `pending`, so the job waits for the callback
// (the caller's fallback is `transcribe` with a long route timeout, which holds the connection
// until the result). Without a callback URL `submit` fails as misconfigured. `parseCallback` reads
// `metadata.request_id`, the token, and the result (a body without `results` is a failure, its
// `err_msg` the reason); the language is the detected one, or null (the caller knows what it asked).
import { scrub } from '../upstream-errors.ts';
import { isObject, protocolError } from '../validate.ts';
import { UpstreamError, type CallbackHeaders, type ParsedCallback, type TranscriptionJobCapability } from '../types.ts';
import type { UpstreamFiles } from '../upload.ts';
import { listenCall } from './call.ts';
import { deepgramRefuses, listenQuery, parseDeepgram } from './transcribe.ts';

export const CALLBACK_SECRET = 'callback_secret';

export function deepgramJobs(files: UpstreamFiles): TranscriptionJobCapability {
  return {
    refuses: deepgramRefuses,
    async submit(route, req, signal, callback) {
      if (!callback) throw new UpstreamError('config', `route ${route.id}: Deepgram jobs need a callback URL (Deepgram has no job status to poll)`, false);
      const query = listenQuery(route, req);
      query.set('callback', callback.url);
      query.set('extra', `${CALLBACK_SECRET}:${callback.token}`);
      const json = await files.json(listenCall(route, query, req.audio, signal));
      const id = isObject(json) ? json.request_id : undefined;
      if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{1,128}$/.test(id)) throw protocolError(route.id, 'no request_id');
      return { providerJobId: id };
    },
    async poll() {
      return { state: 'pending' };
    },
    parseCallback: parseDeepgramCallback,
  };
}

export function parseDeepgramCallback(body: unknown, _headers: CallbackHeaders): ParsedCallback | null {
  const metadata = isObject(body) ? body.metadata : undefined;
  if (!isObject(body) || !isObject(metadata) || typeof metadata.request_id !== 'string' || metadata.request_id.length > 128) return null;
  const extra = metadata.extra;
  const secret = isObject(extra) ? extra[CALLBACK_SECRET] : undefined;
  const parsed: ParsedCallback = { providerJobId: metadata.request_id, token: typeof secret === 'string' ? secret : null };
  if (body.results === undefined) {
    const said = typeof body.err_msg === 'string' ? scrub(body.err_msg, []) : '';
    parsed.result = { state: 'failed', message: said || 'the provider failed the job' };
    return parsed;
  }
  try {
    parsed.result = { state: 'completed', transcript: parseDeepgram('deepgram callback', { timestamps: ['segment'] }, body) };
  } catch {
    parsed.result = { state: 'failed', message: 'the provider sent a malformed result' };
  }
  return parsed;
}
