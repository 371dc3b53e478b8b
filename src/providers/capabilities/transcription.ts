// The speech-to-text capabilities' ports: a synchronous transcription (`transcribe`) and a long
// recording's job at a provider (`transcriptionJobs`: submit, poll, the provider's callback), with
// the audio they take and the transcript they answer in the gateway's terms.
import type { CancelSignal } from '../cancel.ts';
import type { Refusal, ResolvedRoute } from '../upstream.ts';
import type { RecognitionContext } from '../../shared/recognition-context.ts';

export type { ExpectedAnswer, RecognitionContext } from '../../shared/recognition-context.ts';

/** Output modes of speech-to-text (Sarvam's names; OpenAI-compatible models offer `transcribe`, `translate`). */
export type SttMode = 'transcribe' | 'translate' | 'verbatim' | 'translit' | 'codemix';

/** Audio the gateway holds, decoded facts included (ffprobe'd from the bytes, not the name). */
export interface AudioInput {
  /** A local file with the client's bytes as uploaded (the blob's path, or a temporary copy). */
  path: string;
  /** The bytes themselves, in memory, read instead of `path` (a realtime utterance's WAV: no file per utterance). */
  data?: Uint8Array;
  /** The client's file name (for multipart uploads upstream; never trusted for the format). */
  filename: string;
  /** From the probe: `audio/wav`, `audio/mpeg`, `audio/ogg`, `audio/flac`, `audio/mp4`, `audio/webm`... */
  contentType: string;
  bytes: number;
  /** Decoded duration in seconds. */
  durationS: number;
  /**
   * The audio already decoded to 16 kHz mono s16le, exactly the `durationS` measured (a sync call
   * keeps what it decoded, at most about 1 MB, for an engine in this process): an engine that decodes
   * the audio itself takes this instead, so the upload is decoded once.
   */
  pcm?: Uint8Array;
}

export interface TranscribeRequest {
  audio: AudioInput;
  /** BCP-47 (`hi-IN`, `en-US`), or absent for the provider's detection. Providers translate codes. */
  language?: string;
  mode: SttMode;
  /**
   * What the speech is expected to hold (the client's `prompt` and `key_terms`; a call's last
   * question, the pack's terms and the answer's shape): each provider sends what its API takes.
   */
  context?: RecognitionContext;
  temperature?: number;
  /** Which timestamps to return; the provider returns what it can. */
  timestamps: ('segment' | 'word')[];
  /** Jobs only: speaker labels wanted, and how many speakers to expect (a hint). */
  diarize?: boolean;
  numSpeakers?: number;
}

export interface TranscriptWord {
  word: string;
  start: number;
  end: number;
  /** The provider's own label (an integer, a letter, a name); the gateway renames to SPEAKER_NN. */
  speaker?: string | number | null;
}

export interface TranscriptSegment {
  start: number;
  end: number;
  text: string;
  speaker?: string | number | null;
  words?: TranscriptWord[];
  /** Whisper's decoder fields (verbose_json), when the upstream gave them well-formed: passed on as given. */
  decoder?: WhisperDecoderFields;
}

/** What a Whisper upstream says of a segment's decoding; verbose_json passes it on. */
export interface WhisperDecoderFields {
  tokens?: number[];
  avg_logprob?: number;
  no_speech_prob?: number;
}

/** A transcript in the gateway's terms (seconds; BCP-47 language), whatever the provider's shape. */
export interface Transcript {
  text: string;
  language: string | null;
  /** Seconds of audio the provider reported (the gateway bills its own decoded duration). */
  duration: number | null;
  segments: TranscriptSegment[];
  /**
   * Other readings of the same speech, the text's first, when the recogniser gives them: stt-local
   * on a call's turn (its pack's model), for the agent to answer the first it understands
   * (src/voice/understanding.ts). Internal: never in a response.
   */
  alternatives?: string[];
}

/** Synchronous speech-to-text (`POST /v1/audio/transcriptions`: up to about 30 s of audio). */
export interface TranscribeCapability {
  /**
   * As ChatCapability's, with the route: what a route can honour depends on its upstream model
   * (OpenAI's diarize model takes no prompt, only whisper-1 translates, Sarvam's saarika has one mode).
   */
  refuses?(req: TranscribeRequest, route: ResolvedRoute): Refusal | undefined;
  transcribe(route: ResolvedRoute, req: TranscribeRequest, signal: CancelSignal): Promise<Transcript>;
}

/** Where a provider may call back when a job finishes (the gateway's URL, with a per-job secret). */
export interface JobCallback {
  url: string;
  token: string;
}

export type JobPoll = { state: 'pending' } | { state: 'completed'; transcript: Transcript } | { state: 'failed'; message: string };

/**
 * Long-recording jobs at a provider. `submit` hands over the audio once and answers the provider's
 * job id; the caller records it (a fenced step) so a crash never submits the same audio twice,
 * then `poll`s, or waits for the provider's callback, which `parseCallback` reads. A provider that
 * offers no job API can run `transcribe` for the whole file instead (the caller's choice).
 */
export interface TranscriptionJobCapability {
  refuses?(req: TranscribeRequest, route: ResolvedRoute): Refusal | undefined;
  submit(route: ResolvedRoute, req: TranscribeRequest, signal: CancelSignal, callback?: JobCallback): Promise<{ providerJobId: string }>;
  /**
   * Providers whose job id comes before the audio (Sarvam) split `submit` in two, so the caller
   * records the id before anything can start: `create` makes the provider's job (nothing is
   * processed yet); `start` hands it the audio and starts it, and leaves a job that already started
   * as it is, so calling it again after a crash never processes the audio twice.
   */
  create?(route: ResolvedRoute, req: TranscribeRequest, signal: CancelSignal, callback?: JobCallback): Promise<{ providerJobId: string }>;
  start?(route: ResolvedRoute, providerJobId: string, req: TranscribeRequest, signal: CancelSignal): Promise<void>;
  poll(route: ResolvedRoute, providerJobId: string, signal: CancelSignal): Promise<JobPoll>;
  /**
   * A callback the provider POSTed (its parsed JSON body and its headers): which job it is about,
   * the token it presents (the JobCallback's, which the caller compares in constant time before
   * believing anything else; null when none came), and its result when the body carries it
   * (Deepgram's does; Sarvam's only says the state, so the caller polls). Null when the body is
   * not this provider's callback.
   */
  parseCallback?(body: unknown, headers: CallbackHeaders): ParsedCallback | null;
}

/** Request headers as Node gives them (lower-case names). */
export type CallbackHeaders = Readonly<Record<string, string | string[] | undefined>>;

export interface ParsedCallback {
  providerJobId: string;
  token: string | null;
  result?: JobPoll;
}
