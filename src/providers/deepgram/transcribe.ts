// Deepgram's pre-recorded speech-to-text: `POST {base_url}/v1/listen?model=…&punctuate=true&
// utterances=true[&diarize=true]&language=…` (or `detect_language=true` when no language is
// given) with the audio as the body. Languages: English with the regions Deepgram lists (en-US,
// en-GB, en-AU, en-IN, en-NZ) as given, anything else by its language (`hi-IN` → `hi`). Deepgram
// only transcribes: other modes are refused; it takes no prompt or temperature (ignored) and no
// speaker-count hint. The context's key terms go as Deepgram biases each model (`deepgramTerms`):
// `keyterm` per term for Nova-3, `keywords` per word for the models before it. The answer: segments are the utterances (channel 0), with Deepgram's integer
// speakers when diarizing and words when asked; the language is the detected one, or the
// request's; the duration is metadata.duration.
import { isObject, protocolError, type Json } from '../validate.ts';
import { languageTag, primaryLanguage, secondsOf, spanOf, speakerOf, textOf } from '../transcript.ts';
import type { UpstreamFiles } from '../upload.ts';
import type { Refusal, ResolvedRoute, TranscribeCapability, TranscribeRequest, Transcript, TranscriptSegment, TranscriptWord } from '../types.ts';
import { listenCall } from './call.ts';

const ENGLISH_REGIONS = new Set(['en-US', 'en-GB', 'en-AU', 'en-IN', 'en-NZ']);

export function deepgramTranscribe(files: UpstreamFiles): TranscribeCapability {
  return {
    refuses: deepgramRefuses,
    async transcribe(route, req, signal) {
      const json = await files.json(listenCall(route, listenQuery(route, req), req.audio, signal));
      return parseDeepgram(route.id, req, json);
    },
  };
}

export function deepgramRefuses(req: TranscribeRequest): Refusal | undefined {
  return req.mode === 'transcribe' ? undefined : { param: 'mode', message: `Deepgram only transcribes; it has no ${req.mode} mode.` };
}

/** Deepgram's `language` for a BCP-47 tag (see the header). */
export function deepgramLanguage(tag: string): string {
  const [lang = '', region = ''] = tag.split('-');
  const regional = `${lang.toLowerCase()}-${region.toUpperCase()}`;
  return ENGLISH_REGIONS.has(regional) ? regional : primaryLanguage(tag);
}

export function listenQuery(route: ResolvedRoute, req: TranscribeRequest): URLSearchParams {
  const q = new URLSearchParams({ model: route.upstreamModel, punctuate: 'true', utterances: 'true' });
  if (req.diarize === true) q.set('diarize', 'true');
  if (req.language !== undefined) q.set('language', deepgramLanguage(req.language));
  else q.set('detect_language', 'true');
  for (const [name, value] of deepgramTerms(route.upstreamModel, req.context?.keyTerms)) q.append(name, value);
  return q;
}

/** Deepgram's budget for a request's key terms (its documented limit: 500 tokens across them). */
const KEYTERM_TOKENS = 500;

/**
 * Key terms as Deepgram takes them for `model` (its pre-recorded and live `/v1/listen` alike):
 * Nova-3 models take Keyterm Prompting, `keyterm=<term>` once per term (a phrase as it is), in
 * order while they fit Deepgram's 500-token budget (counted generously: a token per 3 characters);
 * older models (Nova-2, Nova-1, Enhanced, Base) take `keywords=<word>` instead, single words only,
 * so a phrase's words go one by one (repeats once). Nothing for no terms.
 */
export function deepgramTerms(model: string, terms: readonly string[] | undefined): [string, string][] {
  if (!terms || terms.length === 0) return [];
  if (/^nova-3/i.test(model)) {
    const out: [string, string][] = [];
    let tokens = 0;
    for (const term of terms) {
      tokens += Math.ceil(term.length / 3);
      if (tokens > KEYTERM_TOKENS) break;
      out.push(['keyterm', term]);
    }
    return out;
  }
  const words = new Set(terms.flatMap((t) => t.split(/[^\p{L}\p{N}'-]+/u)).filter((w) => w !== ''));
  return [...words].slice(0, 100).map((w) => ['keywords', w]);
}

/**
 * Deepgram's answer (the sync one and the callback's body): `metadata {request_id, duration}`,
 * `results.channels[0] {alternatives[0] {transcript, words[]}, detected_language?}` and
 * `results.utterances[] {start, end, transcript, speaker, channel, words[]}`. Without utterances,
 * consecutive words of one speaker make a segment.
 */
export function parseDeepgram(routeId: string, req: Pick<TranscribeRequest, 'language' | 'timestamps'>, json: unknown): Transcript {
  if (!isObject(json) || !isObject(json.results) || !Array.isArray(json.results.channels)) throw protocolError(routeId, 'no results');
  const channel = json.results.channels[0];
  const alternative = isObject(channel) && Array.isArray(channel.alternatives) ? channel.alternatives[0] : undefined;
  if (!isObject(channel) || !isObject(alternative)) throw protocolError(routeId, 'no transcript alternative');
  const text = textOf(routeId, alternative.transcript, 'the transcript');
  const withWords = req.timestamps.includes('word');
  const utterances = json.results.utterances;
  const segments = Array.isArray(utterances)
    ? utterances.filter((u) => !isObject(u) || u.channel === undefined || u.channel === 0).map((u) => utteranceOf(routeId, u, withWords))
    : bySpeaker(wordsOf(routeId, alternative.words), withWords);
  const detected =
    typeof channel.detected_language === 'string' && /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(channel.detected_language) ? channel.detected_language : null;
  return {
    text,
    language: detected !== null ? languageTag(detected, req.language) : (req.language ?? null),
    duration: isObject(json.metadata) ? secondsOf(json.metadata.duration) : null,
    segments,
  };
}

function utteranceOf(routeId: string, u: unknown, withWords: boolean): TranscriptSegment {
  if (!isObject(u)) throw protocolError(routeId, 'an utterance is not an object');
  const segment: TranscriptSegment = { ...spanOf(routeId, u.start, u.end, 'an utterance'), text: textOf(routeId, u.transcript, 'an utterance').trim() };
  const speaker = speakerOf(u.speaker);
  if (speaker !== null) segment.speaker = speaker;
  if (withWords) segment.words = wordsOf(routeId, u.words);
  return segment;
}

function wordsOf(routeId: string, v: unknown): TranscriptWord[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw protocolError(routeId, 'words is not a list');
  return v.map((w: unknown) => {
    if (!isObject(w)) throw protocolError(routeId, 'a word is not an object');
    const word: TranscriptWord = { word: textOf(routeId, (w as Json).punctuated_word ?? w.word, 'a word'), ...spanOf(routeId, w.start, w.end, 'a word') };
    const speaker = speakerOf(w.speaker);
    if (speaker !== null) word.speaker = speaker;
    return word;
  });
}

/** Segments from words: a new one at each change of speaker. */
function bySpeaker(words: TranscriptWord[], withWords: boolean): TranscriptSegment[] {
  type Run = TranscriptSegment & { words: TranscriptWord[] };
  const out: Run[] = [];
  let current: Run | null = null;
  for (const w of words) {
    if (!current || current.speaker !== (w.speaker ?? null)) {
      current = { start: w.start, end: w.end, text: '', speaker: w.speaker ?? null, words: [] };
      out.push(current);
    }
    current.end = Math.max(current.end, w.end);
    current.words.push(w);
  }
  return out.map(({ words: ws, speaker, ...s }) => ({
    ...s,
    text: ws.map((w) => w.word).join(' '),
    ...(speaker !== null ? { speaker } : {}),
    ...(withWords ? { words: ws } : {}),
  }));
}
