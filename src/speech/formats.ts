// A transcript in OpenAI's transcription response formats (`response_format`): `json`,
// `verbose_json`, `text`, `srt`, `vtt`. JSON bodies go out as application/json, the other three as
// text/plain, as OpenAI's servers send them.
//
// verbose_json carries Whisper's decoder fields on each segment: a Whisper upstream's own `tokens`,
// `avg_logprob` and `no_speech_prob` as it gave them. An engine that is not Whisper has no Whisper
// tokens or no-speech probability: those come out as `tokens: []` and `no_speech_prob: 0`;
// `avg_logprob` is the engine's own when it gives word confidences, else 0; `compression_ratio` is
// computed as Whisper does (text bytes / zlib-compressed bytes).

import { deflateSync } from 'node:zlib';
import { whisperLanguageName } from './languages.ts';
import { transcriptWords, type Transcript, type TranscriptWord } from './transcript.ts';

export const RESPONSE_FORMATS = ['json', 'verbose_json', 'text', 'srt', 'vtt'] as const;
export type ResponseFormat = (typeof RESPONSE_FORMATS)[number];
export type TimestampGranularity = 'segment' | 'word';

export interface RenderOptions {
  format: ResponseFormat;
  /** verbose_json only; `['segment']` when absent or empty, as OpenAI's default. */
  granularities?: readonly TimestampGranularity[];
  /** The request's temperature, echoed on each verbose_json segment (default 0). */
  temperature?: number;
  /** verbose_json `task`: `transcribe`, or `translate` for the translation endpoint. */
  task?: 'transcribe' | 'translate';
}

export interface Rendered {
  contentType: 'application/json; charset=utf-8' | 'text/plain; charset=utf-8';
  body: string;
}

/** OpenAI's `usage` for duration-billed models: whole seconds, rounded up. */
export function durationUsage(duration: number): { type: 'duration'; seconds: number } {
  return { type: 'duration', seconds: Math.ceil(duration - 1e-9) };
}

export interface VerboseSegment {
  id: number;
  seek: number;
  start: number;
  end: number;
  text: string;
  tokens: number[];
  temperature: number;
  avg_logprob: number;
  compression_ratio: number;
  no_speech_prob: number;
}

export interface VerboseTranscription {
  task: 'transcribe' | 'translate';
  language: string;
  duration: number;
  text: string;
  segments?: VerboseSegment[];
  words?: TranscriptWord[];
  usage: { type: 'duration'; seconds: number };
}

/** Whisper's measure of repetitiveness: UTF-8 bytes over zlib-compressed bytes. */
export function compressionRatio(text: string): number {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length === 0) return 0;
  return bytes.length / deflateSync(bytes).length;
}

/** Whisper's 30-second windows, in 10 ms frames: the `seek` of the window a segment starts in. */
const seekOf = (start: number): number => Math.floor(start / 30) * 3000;

export function verboseJson(transcript: Transcript, options: Omit<RenderOptions, 'format'> = {}): VerboseTranscription {
  const granularities = options.granularities?.length ? options.granularities : ['segment'];
  const segments = transcript.segments.map((s, id): VerboseSegment => {
    const text = ` ${s.text.trim()}`; // Whisper's segment text starts with a space
    return {
      id,
      seek: seekOf(s.start),
      start: s.start,
      end: s.end,
      text,
      tokens: s.tokens ?? [],
      temperature: options.temperature ?? 0,
      avg_logprob: s.avg_logprob ?? 0,
      compression_ratio: compressionRatio(text),
      no_speech_prob: s.no_speech_prob ?? 0,
    };
  });
  return {
    task: options.task ?? 'transcribe',
    language: whisperLanguageName(transcript.language) ?? transcript.language,
    duration: transcript.duration,
    text: transcript.text,
    ...(granularities.includes('segment') ? { segments } : {}),
    ...(granularities.includes('word') ? { words: transcriptWords(transcript) } : {}),
    usage: durationUsage(transcript.duration),
  };
}

/** `HH:MM:SS,mmm` (SRT) or `HH:MM:SS.mmm` (WebVTT). */
export function timestamp(seconds: number, separator: ',' | '.'): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  return `${pad(h)}:${pad(m)}:${pad(s)}${separator}${pad(ms % 1000, 3)}`;
}

/** The cues subtitles show: segments with text, one line each. */
function cues(transcript: Transcript): { start: number; end: number; text: string }[] {
  return transcript.segments.map((s) => ({ start: s.start, end: s.end, text: s.text.trim().replace(/\s*\n\s*/g, ' ') })).filter((c) => c.text.length > 0);
}

export function srt(transcript: Transcript): string {
  return cues(transcript)
    .map((c, i) => `${i + 1}\n${timestamp(c.start, ',')} --> ${timestamp(c.end, ',')}\n${c.text}\n\n`)
    .join('');
}

export function vtt(transcript: Transcript): string {
  return `WEBVTT\n\n${cues(transcript)
    .map((c) => `${timestamp(c.start, '.')} --> ${timestamp(c.end, '.')}\n${c.text}\n\n`)
    .join('')}`;
}

export function renderTranscript(transcript: Transcript, options: RenderOptions): Rendered {
  const json = (value: unknown): Rendered => ({ contentType: 'application/json; charset=utf-8', body: JSON.stringify(value) });
  const plain = (body: string): Rendered => ({ contentType: 'text/plain; charset=utf-8', body });
  switch (options.format) {
    case 'json':
      return json({ text: transcript.text, usage: durationUsage(transcript.duration) });
    case 'verbose_json':
      return json(verboseJson(transcript, options));
    case 'text':
      return plain(`${transcript.text}\n`);
    case 'srt':
      return plain(srt(transcript));
    case 'vtt':
      return plain(vtt(transcript));
  }
}
