// The realtime socket's query string, checked before the upgrade (a refusal is 400 in the envelope,
// naming the parameter). `api_key` is read by the authentication, never here, and never logged.
import { ApiError, echo } from '../errors.ts';
import { ENCODINGS, type Encoding } from '../realtime/decoder.ts';
import type { StreamQuery } from '../realtime/service.ts';
import { brokenRule } from '../shared/strings.ts';

const KNOWN = new Set(['model', 'language', 'sample_rate', 'encoding', 'return_timestamps', 'api_key', 'intent']);

const bad = (param: string, message: string) => new ApiError('invalid_request', message, { param });

/** The query as read: `model` null on a socket whose model comes in its first `session.update`. */
export type SocketQuery = Omit<StreamQuery, 'model'> & { model: string | null };

/**
 * `openaiPath`: the socket is on OpenAI's `/v1/realtime`, whose audio is by default its `pcm16`
 * (24 kHz, not the spec's 16 kHz), and where OpenAI's `intent=transcription` may come without a
 * model (its clients name the model in the session's first `session.update`: openai 7's
 * `OpenAIRealtimeWS({intent: 'transcription'})`).
 */
export function readStreamQuery(params: URLSearchParams, openaiPath = false): SocketQuery {
  for (const name of params.keys()) if (!KNOWN.has(name)) throw bad(echo(name), `Unknown query parameter '${echo(name)}'.`);
  for (const name of KNOWN) if (params.getAll(name).length > 1) throw bad(name, `Give '${name}' once.`);
  const defaultRate = openaiPath ? '24000' : '16000';
  // OpenAI's `intent=transcription` (its URL for transcription sessions) means nothing more, but on its path a model may come later.
  const intent = params.get('intent');
  if (intent !== null && intent !== 'transcription') throw bad('intent', "'intent' can only be 'transcription'.");
  const model = params.get('model');
  if (!model && !(openaiPath && intent !== null))
    throw new ApiError(
      'missing_input',
      "The query parameter 'model' is required (or, on /v1/realtime, intent=transcription and the model in session.update).",
      {
        param: 'model',
      },
    );
  if (!model) return { model: null, ...settingsOf(params, defaultRate) };
  checkModelName(model, 'model');
  return { model, ...settingsOf(params, defaultRate) };
}

/** A model's name as a query parameter or a session.update names it: refused (naming `param`) when it cannot be one. */
export function checkModelName(model: string, param: string, where = 'querystring field'): void {
  if (model.length > 200) throw bad(param, `'${param}' is at most 200 characters.`);
  // As an HTTP route's query schema answers (a NUL would otherwise reach the store's key check: a 500).
  const rule = brokenRule(model, 'key');
  if (rule) throw bad(param, `Invalid ${where} '${param}': ${rule}.`);
}

function settingsOf(params: URLSearchParams, defaultRate: '16000' | '24000'): Omit<StreamQuery, 'model'> {
  const language = params.get('language')?.trim() || null;
  if (language !== null && !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(language)) throw bad('language', "'language' is a BCP-47 tag such as en or en-US.");
  const encoding = (params.get('encoding') ?? 'pcm_s16le') as Encoding;
  if (!(ENCODINGS as readonly string[]).includes(encoding)) throw bad('encoding', `'encoding' is one of ${ENCODINGS.join(', ')}.`);
  const rate = params.get('sample_rate') ?? (encoding === 'pcm_s16le' ? defaultRate : '16000');
  if (rate !== '16000' && rate !== '8000' && rate !== '24000') throw bad('sample_rate', "'sample_rate' is 16000, 8000 or 24000 (pcm_s16le only).");
  if (rate === '24000' && encoding !== 'pcm_s16le') throw bad('sample_rate', "'sample_rate' 24000 is for pcm_s16le only.");
  const ts = params.get('return_timestamps') ?? 'true';
  if (ts !== 'true' && ts !== 'false') throw bad('return_timestamps', "'return_timestamps' is true or false.");
  return { language, sampleRate: rate === '8000' ? 8000 : rate === '24000' ? 24000 : 16000, encoding, returnTimestamps: ts === 'true' };
}
