// What a transcription request asks for, read from its multipart fields and checked against the
// model: the rules the sync endpoint and the jobs endpoint share. Field names follow OpenAI's
// (`language` as client libraries send it, `language_code` as the spec names it) plus ours
// (`mode`, `diarize`, `num_speakers`, and `key_terms[]`: words and phrases to favour, repeated as
// form encoders send an array, like `timestamp_granularities[]`; `key_terms` repeated is taken too).
import { ApiError, echo } from '../errors.ts';
import { sttFeatures } from '../models/catalog.ts';
import type { ModelDoc, SttMode } from '../models/types.ts';
import { STT_MODES } from '../shared/model-schema.ts';
import { RESPONSE_FORMATS, type ResponseFormat, type TimestampGranularity } from '../speech/formats.ts';
import { matchLanguage } from '../speech/languages.ts';
import { brokenRule } from '../shared/strings.ts';
import { readKeyTerms } from '../shared/recognition-context.ts';

export interface TranscriptionFields {
  model: string;
  /** As the client sent it (checked against the model's languages by `checkAgainstModel`). */
  language?: string;
  /** The field it came in (`language`, OpenAI's, or `language_code`, the spec's): an error names it. */
  languageParam?: 'language' | 'language_code';
  mode: SttMode;
  responseFormat: ResponseFormat;
  granularities: TimestampGranularity[];
  prompt?: string;
  /** The gateway's extension: words and phrases the speech likely holds (checked: src/shared/recognition-context.ts). */
  keyTerms?: string[];
  temperature?: number;
  /** Asked on `POST /v1/audio/translations` (OpenAI's endpoint: mode `translate`, no `mode` field). */
  translation?: true;
  /** Jobs only. */
  diarize: boolean;
  numSpeakers?: number;
}

const bad = (param: string, message: string) => new ApiError('invalid_request', message, { param });

function one(fields: Map<string, string[]>, name: string): string | undefined {
  const values = fields.get(name);
  if (!values) return undefined;
  if (values.length > 1) throw bad(name, `Give '${name}' once.`);
  return values[0];
}

function bool(fields: Map<string, string[]>, name: string, fallback: boolean): boolean {
  const v = one(fields, name);
  if (v === undefined) return fallback;
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw bad(name, `'${name}' is true or false.`);
}

/**
 * Reads the form's fields (the file is read separately). `allowed` names the fields the endpoint
 * takes; any other field is refused, as JSON bodies' unknown fields are.
 */
export function readFields(fields: Map<string, string[]>, endpoint: Endpoint): TranscriptionFields {
  const allowed = FORM_FIELDS[endpoint];
  for (const name of fields.keys()) {
    if (!allowed.has(name)) throw bad(name, `Unknown field '${name}'.`);
  }
  const model = one(fields, 'model');
  if (!model) throw bad('model', "The field 'model' is required.");
  // The rules of `model` in the JSON bodies (KeyString(200)), in their words.
  if (model.length > 200) throw bad('model', "Invalid field 'model': must NOT have more than 200 characters.");
  const modelRule = brokenRule(model, 'key');
  if (modelRule) throw bad('model', `Invalid field 'model': ${modelRule}.`);
  const byCode = one(fields, 'language_code');
  const byName = one(fields, 'language');
  if (byCode !== undefined && byName !== undefined && byCode !== byName)
    throw bad('language_code', "Give 'language_code' or 'language', not two different ones.");
  const language = (byCode ?? byName)?.trim() || undefined;
  const mode = (one(fields, 'mode') ?? 'transcribe') as SttMode;
  if (!(STT_MODES as readonly string[]).includes(mode)) throw bad('mode', `'mode' is one of ${STT_MODES.join(', ')}.`);
  const responseFormat = (one(fields, 'response_format') ?? 'json') as ResponseFormat;
  if (!(RESPONSE_FORMATS as readonly string[]).includes(responseFormat))
    throw bad('response_format', `'response_format' is one of ${RESPONSE_FORMATS.join(', ')}.`);
  const granularities = [...(fields.get('timestamp_granularities[]') ?? []), ...(fields.get('timestamp_granularities') ?? [])] as TimestampGranularity[];
  for (const g of granularities)
    if (g !== 'segment' && g !== 'word') throw bad('timestamp_granularities[]', "Each timestamp granularity is 'segment' or 'word'.");
  const out: TranscriptionFields = {
    model,
    mode,
    responseFormat,
    granularities: [...new Set(granularities)],
    diarize: bool(fields, 'diarize', endpoint === 'jobs'),
  };
  if (endpoint === 'translations') {
    out.mode = 'translate';
    out.translation = true;
  }
  if (language) {
    out.language = language;
    out.languageParam = byCode !== undefined ? 'language_code' : 'language';
  }
  const prompt = one(fields, 'prompt');
  const promptRule = prompt ? brokenRule(prompt, 'free') : null;
  if (promptRule) throw bad('prompt', `Invalid field 'prompt': ${promptRule}.`);
  if (prompt) out.prompt = prompt;
  const keyTerms = readFormKeyTerms(fields);
  if (keyTerms.length > 0) out.keyTerms = keyTerms;
  const temperature = one(fields, 'temperature');
  if (temperature !== undefined) {
    const t = Number(temperature);
    if (temperature.trim() === '' || !Number.isFinite(t) || t < 0 || t > 1) throw bad('temperature', "'temperature' is a number from 0 to 1.");
    out.temperature = t;
  }
  const speakers = one(fields, 'num_speakers');
  if (speakers !== undefined) {
    const n = Number(speakers);
    if (!Number.isInteger(n) || n < 1 || n > 20) throw bad('num_speakers', "'num_speakers' is a whole number from 1 to 20.");
    out.numSpeakers = n;
  }
  const stream = one(fields, 'stream');
  if (stream !== undefined && stream !== 'false') throw bad('stream', 'Streamed transcription is not offered here; use the realtime WebSocket.');
  return out;
}

/** `key_terms[]` (and `key_terms`), repeated: the terms, checked, or a 400 naming the field and the term. */
function readFormKeyTerms(fields: Map<string, string[]>): string[] {
  const bracketed = fields.get('key_terms[]') ?? [];
  const plain = fields.get('key_terms') ?? [];
  const param = bracketed.length > 0 || plain.length === 0 ? 'key_terms[]' : 'key_terms';
  const read = readKeyTerms([...bracketed, ...plain]);
  if ('terms' in read) return read.terms;
  throw bad(param, `Invalid field '${param}': ${read.problem}${read.index !== undefined ? ` (term ${read.index + 1})` : ''}.`);
}

/** The transcription endpoints: `sync` is POST /v1/audio/transcriptions, `translations` OpenAI's POST /v1/audio/translations. */
export type Endpoint = 'sync' | 'jobs' | 'translations';

const KEY_TERMS = ['key_terms[]', 'key_terms'];
const COMMON = ['model', 'language', 'language_code', 'mode', 'prompt', 'temperature', ...KEY_TERMS];
/** The form fields each endpoint takes (its documented form lists the same: src/http/routes/v1-audio.ts). */
export const FORM_FIELDS: Record<Endpoint, ReadonlySet<string>> = {
  sync: new Set([...COMMON, 'response_format', 'timestamp_granularities[]', 'timestamp_granularities', 'stream']),
  jobs: new Set([...COMMON, 'diarize', 'num_speakers']),
  // OpenAI's CreateTranslationRequest: English out, so no language, and no mode to choose.
  translations: new Set(['model', 'prompt', 'response_format', 'temperature', ...KEY_TERMS]),
};

/**
 * The model's rules: a mode it offers (`mode_not_supported`), a language it offers
 * (`language_not_supported`, naming the field the client sent; answered as the model's own tag: a
 * bare `en` is the model's first English region, `matchLanguage`), jobs and diarization where asked.
 * Returns the language to ask the provider for, if any.
 */
export function checkAgainstModel(model: ModelDoc, req: TranscriptionFields, endpoint: 'sync' | 'jobs'): string | undefined {
  const features = sttFeatures(model);
  if (!features.modes.includes(req.mode)) {
    // On the translations endpoint the client chose no mode: the model is what cannot translate.
    if (req.translation)
      throw new ApiError(
        'mode_not_supported',
        `The model '${model._id}' does not translate (its modes: ${features.modes.join(', ')}); pick a model whose 'modes' include translate in /v1/models.`,
        { param: 'model' },
      );
    throw new ApiError('mode_not_supported', `The model '${model._id}' offers the modes ${features.modes.join(', ')}, not '${req.mode}'.`, { param: 'mode' });
  }
  if (endpoint === 'jobs' && !features.jobs) {
    throw new ApiError('invalid_request', `The model '${model._id}' does not run transcription jobs; see its 'jobs' field in /v1/models.`, { param: 'model' });
  }
  if (endpoint === 'jobs' && req.diarize && !features.diarization) {
    throw new ApiError('invalid_request', `The model '${model._id}' does not label speakers; send diarize=false or pick a model with 'diarization'.`, {
      param: 'diarize',
    });
  }
  if (req.language === undefined) return undefined;
  const offered = model.languages ?? [];
  const matched = matchLanguage(req.language, offered);
  if (!matched) {
    throw new ApiError('language_not_supported', `The model '${model._id}' offers ${offered.join(', ') || 'no languages'}, not '${echo(req.language)}'.`, {
      param: req.languageParam ?? 'language_code',
    });
  }
  return matched;
}
