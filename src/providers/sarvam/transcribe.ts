// Sarvam's synchronous speech-to-text: `POST {base_url}/speech-to-text`, multipart with the file
// streamed from disk, `model` = the route's upstream model (`saaras:v3`), `mode` (saaras only:
// transcribe, translate, verbatim, translit, codemix; `saarika` models have one mode and are sent
// none), `language_code` in Sarvam's codes (`or-IN` → `od-IN`; `unknown` to detect; see
// languages.ts) and `with_timestamps` when timestamps are asked. At most 30 s of audio: longer
// audio is refused (a job takes it). Sarvam's timestamps are per chunk, not per word: each chunk
// is a segment. The answer's `language_code` comes back as BCP-47 (`od-IN` → `or-IN`); a
// translation is English (`en`). No diarization here (Sarvam offers it in jobs only).
// The context's key terms go as `keyterms` (one form field per term) to the models that take them
// (saaras:v4 on), at most Sarvam's 50, the first ones; other models get none. Sarvam takes no prompt here.
import { isObject, protocolError, type Json } from '../validate.ts';
import { spanOf, speakerOf, textOf, uploadName } from '../transcript.ts';
import type { UpstreamFiles } from '../upload.ts';
import type { Refusal, ResolvedRoute, TranscribeCapability, TranscribeRequest, Transcript, TranscriptSegment } from '../types.ts';
import { sarvamCall } from './call.ts';
import { fromSarvamLanguage, toSarvamLanguage } from './languages.ts';

/** Audio Sarvam's REST endpoint takes, in seconds. */
export const SARVAM_SYNC_MAX_S = 30;

export function sarvamTranscribe(files: UpstreamFiles): TranscribeCapability {
  return {
    refuses(req, route) {
      if (req.audio.durationS > SARVAM_SYNC_MAX_S) {
        return { param: 'file', message: `Sarvam transcribes at most ${SARVAM_SYNC_MAX_S} s of audio at once; use a transcription job.` };
      }
      return sarvamRefuses(req, route);
    },
    async transcribe(route, req, signal) {
      const fields: [string, string][] = [['model', route.upstreamModel], ...sarvamParameters(route, req)];
      fields.push(['with_timestamps', String(req.timestamps.length > 0)]);
      for (const term of sarvamKeyterms(route, req) ?? []) fields.push(['keyterms', term]);
      const file = {
        field: 'file',
        filename: uploadName(req.audio),
        contentType: req.audio.contentType,
        path: req.audio.path,
        ...(req.audio.data ? { data: req.audio.data } : {}),
      };
      const json = await files.json(sarvamCall(route, 'POST', '/speech-to-text', { type: 'multipart', fields, file }, signal));
      return parseSarvamTranscript(route.id, req, json);
    },
  };
}

/** Whether a model has Sarvam's output modes (saaras v3 on); saarika models only transcribe. */
function hasModes(route: ResolvedRoute): boolean {
  return !/^saarika/i.test(route.upstreamModel);
}

export function sarvamRefuses(req: TranscribeRequest, route: ResolvedRoute): Refusal | undefined {
  if (!hasModes(route) && req.mode !== 'transcribe') {
    return { param: 'mode', message: `This model only transcribes; it has no ${req.mode} mode.` };
  }
  if (toSarvamLanguage(req.language) === null) {
    return { param: 'language_code', message: `Sarvam does not transcribe ${req.language}.` };
  }
  return undefined;
}

/** The most key terms Sarvam takes. */
const SARVAM_KEYTERMS_MAX = 50;

/** The request's key terms for a model that takes them (saaras:v4 and later; the first 50), else undefined. */
export function sarvamKeyterms(route: ResolvedRoute, req: TranscribeRequest): string[] | undefined {
  const terms = req.context?.keyTerms;
  const version = /^saaras:v(\d+)/i.exec(route.upstreamModel)?.[1];
  if (!terms || terms.length === 0 || version === undefined || Number(version) < 4) return undefined;
  return terms.slice(0, SARVAM_KEYTERMS_MAX);
}

/** The mode and language fields, as both the REST form and a job's parameters name them. */
export function sarvamParameters(route: ResolvedRoute, req: TranscribeRequest): [string, string][] {
  const out: [string, string][] = [];
  if (hasModes(route)) out.push(['mode', req.mode]);
  out.push(['language_code', toSarvamLanguage(req.language) ?? 'unknown']);
  return out;
}

/**
 * Sarvam's transcript (the REST answer, and a job's output file): `transcript`, `language_code`,
 * `timestamps: {words[], start_time_seconds[], end_time_seconds[]}` (chunks), and in jobs
 * `diarized_transcript: {entries: [{transcript, start_time_seconds, end_time_seconds,
 * speaker_id}]}`, whose entries become the segments, speakers as Sarvam labels them.
 */
export function parseSarvamTranscript(routeId: string, req: Pick<TranscribeRequest, 'mode'>, json: unknown): Transcript {
  if (!isObject(json)) throw protocolError(routeId, 'the transcript is not an object');
  const text = textOf(routeId, json.transcript, 'the transcript');
  const language = req.mode === 'translate' ? 'en' : fromSarvamLanguage(json.language_code);
  const diarized = json.diarized_transcript;
  const segments = isObject(diarized) && Array.isArray(diarized.entries) ? entriesOf(routeId, diarized.entries) : chunksOf(routeId, json.timestamps);
  return { text, language, duration: null, segments };
}

function entriesOf(routeId: string, entries: unknown[]): TranscriptSegment[] {
  return entries.map((e) => {
    if (!isObject(e)) throw protocolError(routeId, 'a diarized entry is not an object');
    return {
      ...spanOf(routeId, e.start_time_seconds, e.end_time_seconds, 'a diarized entry'),
      text: textOf(routeId, e.transcript, 'a diarized entry').trim(),
      speaker: speakerOf(e.speaker_id),
    };
  });
}

function chunksOf(routeId: string, timestamps: unknown): TranscriptSegment[] {
  if (timestamps === undefined || timestamps === null) return [];
  const t = timestamps as Json;
  if (!isObject(t) || !Array.isArray(t.words) || !Array.isArray(t.start_time_seconds) || !Array.isArray(t.end_time_seconds)) {
    throw protocolError(routeId, 'timestamps is malformed');
  }
  const { words, start_time_seconds: starts, end_time_seconds: ends } = t;
  if (starts.length !== words.length || ends.length !== words.length) throw protocolError(routeId, 'timestamps lists differ in length');
  return words.map((w, i) => ({ ...spanOf(routeId, starts[i], ends[i], 'a timestamp'), text: textOf(routeId, w, 'a timestamp').trim() }));
}
