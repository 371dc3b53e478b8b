// Speech-to-text against any OpenAI-compatible audio server (OpenAI; self-hosted Whisper servers
// such as faster-whisper-server, whisper.cpp's server, vLLM, LocalAI):
// `POST {base_url}/audio/transcriptions`, or `/audio/translations` for mode `translate`, as
// multipart with the file streamed from disk under the name `audio.<ext>` (OpenAI reads the format
// from the extension), `model` = the route's upstream model, `language` as ISO 639-1 (`hi-IN` →
// `hi`), `prompt`, `temperature`.
// The request's context (docs/api/audio.md): its prompt is `prompt`; its key terms go as
// `keywords[]` to gpt-transcribe (the model that takes them), and to every other model folded
// into the prompt after its text (`openaiPrompt`: Whisper keeps a prompt's last 224 tokens, so
// the terms survive a long prompt). A diarizing model takes neither: a prompt is refused, key
// terms (a hint) are not sent.
//
// The answer's format follows the upstream model, as OpenAI's API dictates:
//   - a `*diarize*` model (gpt-4o-transcribe-diarize) → `diarized_json`, with
//     `chunking_strategy=auto` (required past 30 s): segments with the speakers as the model names
//     them (`A`, `B`…); such a model takes no `prompt` (refused) and cannot translate;
//   - gpt-4o-transcribe, gpt-4o-mini-transcribe, gpt-transcribe → `json`: text only, no
//     segments, language or duration (OpenAI accepts nothing else from them); no translation;
//   - anything else (whisper-1, self-hosted Whisper) → `verbose_json` with
//     `timestamp_granularities[]` as asked (`segment` added when `word` is: words are attached to
//     their segments): segments, words, duration, and the language Whisper names ("hindi") as
//     BCP-47 (the request's tag when it is the same language, else the ISO code); each segment's
//     decoder fields (`tokens`, `avg_logprob`, `no_speech_prob`) are kept for verbose_json.
// Translation answers are English (`en`). Modes other than transcribe and translate are refused.
// No job API: a job routed here runs `transcribe` on the whole file (the caller's choice).
import type { CancelSignal } from '../cancel.ts';
import type { FileCall, Payload, UpstreamFiles } from '../upload.ts';
import { isObject, protocolError } from '../validate.ts';
import { attachWords, languageTag, primaryLanguage, secondsOf, spanOf, speakerOf, textOf, uploadName, whisperDecoderOf } from '../transcript.ts';
import type {
  RecognitionContext,
  Refusal,
  ResolvedRoute,
  TranscribeCapability,
  TranscribeRequest,
  Transcript,
  TranscriptSegment,
  TranscriptWord,
} from '../types.ts';
import { openaiCall } from './call.ts';
import { whisperLanguageCode } from './languages.ts';

export type OpenAIAudioFormat = 'verbose_json' | 'json' | 'diarized_json';

/** The answer format a model gives (see the header): decided by the upstream model's name. */
export function audioFormatOf(upstreamModel: string): OpenAIAudioFormat {
  const name = upstreamModel.toLowerCase().split('/').at(-1) ?? '';
  if (name.includes('diarize')) return 'diarized_json';
  if (/^(gpt-4o-transcribe|gpt-4o-mini-transcribe|gpt-transcribe)/.test(name)) return 'json';
  return 'verbose_json';
}

export function openaiTranscribe(files: UpstreamFiles): TranscribeCapability {
  return {
    refuses: openaiRefuses,
    async transcribe(route, req, signal) {
      const format = audioFormatOf(route.upstreamModel);
      const path = req.mode === 'translate' ? '/audio/translations' : '/audio/transcriptions';
      const json = await files.json(audioCall(route, path, transcriptionPayload(route, req, format), signal));
      return parseTranscription(route.id, req, format, json);
    },
  };
}

/** Models that take a list of `keywords[]` of their own (OpenAI's gpt-transcribe); the others read key terms in the prompt. */
function takesKeywords(upstreamModel: string): boolean {
  return /^gpt-transcribe/.test(upstreamModel.toLowerCase().split('/').at(-1) ?? '');
}

/**
 * The prompt an OpenAI upstream gets for a context (the batch form's `prompt`, a realtime
 * session's `input_audio_transcription.prompt`): its text, then (`withTerms`) its key terms as a
 * list, `ATM, debited, dispute`. Undefined when the context holds neither.
 */
export function openaiPrompt(context: RecognitionContext | undefined, withTerms = true): string | undefined {
  const terms = withTerms ? (context?.keyTerms ?? []) : [];
  const parts = [context?.prompt, terms.length > 0 ? terms.join(', ') : undefined].filter((p): p is string => p !== undefined && p !== '');
  return parts.length > 0 ? parts.join('\n') : undefined;
}

export function openaiRefuses(req: TranscribeRequest, route: ResolvedRoute): Refusal | undefined {
  const format = audioFormatOf(route.upstreamModel);
  if (req.mode !== 'transcribe' && req.mode !== 'translate') {
    return { param: 'mode', message: `OpenAI-compatible models transcribe or translate; they have no ${req.mode} mode.` };
  }
  if (req.mode === 'translate' && format !== 'verbose_json') {
    return { param: 'mode', message: 'This model cannot translate (OpenAI translates with whisper-1 only).' };
  }
  if (req.context?.prompt !== undefined && format === 'diarized_json') {
    return { param: 'prompt', message: 'A diarizing model takes no prompt.' };
  }
  return undefined;
}

function audioCall(route: ResolvedRoute, path: string, payload: Payload, signal: CancelSignal): FileCall {
  const { body: _json, ...call } = openaiCall(route, path, null, signal);
  return { ...call, method: 'POST', payload };
}

export function transcriptionPayload(route: ResolvedRoute, req: TranscribeRequest, format: OpenAIAudioFormat): Payload {
  const fields: [string, string][] = [
    ['model', route.upstreamModel],
    ['response_format', format],
  ];
  if (req.mode === 'transcribe' && req.language !== undefined) fields.push(['language', primaryLanguage(req.language)]);
  const keywords = takesKeywords(route.upstreamModel);
  const prompt = format === 'diarized_json' ? undefined : openaiPrompt(req.context, !keywords);
  if (prompt !== undefined) fields.push(['prompt', prompt]);
  if (keywords) for (const term of req.context?.keyTerms ?? []) fields.push(['keywords[]', term]);
  if (req.temperature !== undefined) fields.push(['temperature', String(req.temperature)]);
  if (format === 'diarized_json') fields.push(['chunking_strategy', 'auto']);
  if (format === 'verbose_json' && req.mode === 'transcribe') {
    // Asking for words alone drops the segments; the transcript always has segments.
    const granularities = req.timestamps.includes('word') ? ['segment', 'word'] : ['segment'];
    for (const g of granularities) fields.push(['timestamp_granularities[]', g]);
  }
  return {
    type: 'multipart',
    fields,
    file: {
      field: 'file',
      filename: uploadName(req.audio),
      contentType: req.audio.contentType,
      path: req.audio.path,
      ...(req.audio.data ? { data: req.audio.data } : {}),
    },
  };
}

export function parseTranscription(routeId: string, req: TranscribeRequest, format: OpenAIAudioFormat, json: unknown): Transcript {
  if (!isObject(json)) throw protocolError(routeId, 'the transcription is not an object');
  const text = textOf(routeId, json.text, 'the transcription text');
  const asked = req.mode === 'translate' ? 'en' : req.language;
  if (format === 'json') {
    const usage = json.usage;
    const duration = isObject(usage) && usage.type === 'duration' ? secondsOf(usage.seconds) : null;
    return { text, language: asked ?? null, duration, segments: [] };
  }
  const segments = segmentsOf(routeId, json.segments, format === 'diarized_json');
  if (format === 'diarized_json') return { text, language: asked ?? null, duration: secondsOf(json.duration), segments };
  const language = req.mode === 'translate' ? 'en' : languageTag(whisperLanguageCode(json.language), req.language);
  const words = req.timestamps.includes('word') ? wordsOf(routeId, json.words) : [];
  return { text, language, duration: secondsOf(json.duration), segments: attachWords(text, segments, words) };
}

function segmentsOf(routeId: string, v: unknown, diarized: boolean): TranscriptSegment[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw protocolError(routeId, 'segments is not a list');
  return v.map((s: unknown) => {
    if (!isObject(s)) throw protocolError(routeId, 'a segment is not an object');
    const segment: TranscriptSegment = { ...spanOf(routeId, s.start, s.end, 'a segment'), text: textOf(routeId, s.text, 'a segment').trim() };
    if (diarized) segment.speaker = speakerOf(s.speaker);
    else {
      const decoder = whisperDecoderOf(s);
      if (decoder) segment.decoder = decoder;
    }
    return segment;
  });
}

function wordsOf(routeId: string, v: unknown): TranscriptWord[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw protocolError(routeId, 'words is not a list');
  return v.map((w: unknown) => {
    if (!isObject(w)) throw protocolError(routeId, 'a word is not an object');
    return { word: textOf(routeId, w.word, 'a word').trim(), ...spanOf(routeId, w.start, w.end, 'a word') };
  });
}
