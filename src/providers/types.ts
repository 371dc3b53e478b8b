// The provider boundary (Portkey style): one folder per provider under src/providers/<name>/, one
// file per capability (chat.ts, embeddings.ts), and an index.ts registry keyed by provider name.
// Requests and responses here are OpenAI-shaped whatever the upstream speaks; a provider translates.

import type { CancelSignal } from './cancel.ts';

export interface ResolvedRoute {
  /** Stable id for health tracking and limits: `${modelId}#${index}`. */
  id: string;
  provider: string;
  baseUrl: string;
  /** Resolved key (inline or from the environment); empty when the route has none. */
  apiKey: string;
  upstreamModel: string;
  timeoutMs: number;
  maxConcurrent?: number;
  rpm?: number;
  /** Serves realtime sockets over the provider's own streaming protocol (`realtime` capability); a Sarvam speech route speaks over its HTTP stream. */
  realtime?: boolean;
  /**
   * Set by resolveRoutes when the route cannot work as configured (key variable unset, unparsable
   * base_url, unknown provider): the router counts it as misconfigured without calling it. For
   * logs only; it may name an environment variable, never a key.
   */
  problem?: string;
  /**
   * The URLs of this route's calls by path ('' for base_url itself), parsed on first use by
   * routeUrl and kept on the route, which RouteResolver reuses for every call of a model version.
   */
  urls?: Map<string, URL | null>;
}

/** A function call the model asked for (OpenAI's shape; `arguments` is JSON text as the model wrote it). */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A function the model may call: OpenAI's tool definition, `parameters` a JSON schema. */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

/**
 * A message as the gateway passes it on. Only models with tool calling see `tool` messages,
 * `tool_calls` and a null `content` (an assistant turn that only calls tools).
 */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: ToolCall[];
  /** On a `tool` message: the call it answers. */
  tool_call_id?: string;
}

/** A streamed piece of a tool call: the first carries id, type and name; later ones more arguments. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments?: string };
}

/** OpenAI's `response_format`: plain text, any JSON object, or JSON following a schema. */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };

/** OpenAI's `reasoning_effort`: how much a reasoning model thinks before it answers. */
export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
export const REASONING_EFFORTS: readonly ReasoningEffort[] = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'];

export interface ChatRequest {
  messages: ChatMessage[];
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  stop?: string[];
  n?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  seed?: number;
  response_format?: ResponseFormat;
  reasoning_effort?: ReasoningEffort;
  verbosity?: 'low' | 'medium' | 'high';
  /** Per output token, its log probability (and the `top_logprobs` likeliest alternatives, 0..20). */
  logprobs?: boolean;
  top_logprobs?: number;
  /** Token id (of the upstream model's tokenizer, as a decimal string) → bias, -100..100. */
  logit_bias?: Record<string, number>;
  /**
   * The client's end-user and cache-routing hints (OpenAI's `safety_identifier`, deprecated
   * `user`, `prompt_cache_key`), already made opaque by the gateway: never the client's own value.
   */
  safety_identifier?: string;
  user?: string;
  prompt_cache_key?: string;
  tools?: ToolDefinition[];
  tool_choice?: ToolChoice;
  parallel_tool_calls?: boolean;
}

/**
 * Chat parameters that travel unchanged from the client's body to the request and on to an
 * OpenAI-compatible upstream (routes' schemas checked them; providers that differ translate).
 */
export const PASSED_THROUGH = [
  'temperature', 'top_p', 'n', 'presence_penalty', 'frequency_penalty', 'seed', 'logprobs', 'top_logprobs', 'reasoning_effort', 'verbosity', 'logit_bias',
  'tools', 'tool_choice', 'parallel_tool_calls',
] as const satisfies readonly (keyof ChatRequest)[];

/** Copies the fields `keys` names that are set in `from` onto `to`. */
export function copyDefined<T extends object, K extends keyof T>(from: Pick<T, K>, to: T, keys: readonly K[]): void {
  for (const k of keys) if (from[k] !== undefined) to[k] = from[k];
}

/**
 * A request a provider cannot honour as asked (a parameter it has no equivalent for): `param` names
 * the request field, `message` says why, in words fit for the client.
 */
export interface Refusal {
  param: string;
  message: string;
}

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** Of completion_tokens, how many the model spent reasoning (hidden), when the upstream says. */
  reasoning_tokens?: number;
  /** Of prompt_tokens, how many the upstream read from its prompt cache, when it says. */
  cached_tokens?: number;
}

/** One output token's log probability, in OpenAI's shape (`bytes`: its UTF-8 bytes, or null). */
export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
}

/** OpenAI's `choices[].logprobs` (answers) and its per-chunk part (streams). */
export interface ChoiceLogprobs {
  content: (TokenLogprob & { top_logprobs: TokenLogprob[] })[] | null;
  /** Required by OpenAI's schema beside `content`; refusals are never relayed, so null. */
  refusal: null;
}

export interface ChatChoice {
  index: number;
  /** content is null only when the model answered with tool calls alone. */
  message: { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] };
  finish_reason: string;
  /** Present when the request asked for logprobs: what the upstream gave, or null. */
  logprobs?: ChoiceLogprobs | null;
}

export interface ChatResult {
  choices: ChatChoice[];
  /** As reported by the upstream; null when it reported none (the caller counts with its tokenizer). */
  usage: TokenUsage | null;
}

export interface ChatChunk {
  choices: { index: number; delta: { role?: 'assistant'; content?: string; tool_calls?: ToolCallDelta[] }; finish_reason?: string | null; logprobs?: ChoiceLogprobs }[];
  /** Present on the chunk that carries the upstream's final usage, if any. */
  usage?: TokenUsage;
}

/**
 * OpenAI's embeddings input: a text, texts, one text as token ids, or several as token ids (ids of
 * the upstream model's tokenizer, which only the client can know; passed through untouched).
 */
export type EmbeddingsInput = string | string[] | number[] | number[][];

/** How many embeddings an input asks for: one per text or per token-id list. */
export function embeddingsInputItems(input: EmbeddingsInput): (string | number[])[] {
  if (typeof input === 'string') return [input];
  if (input.length > 0 && typeof input[0] === 'number') return [input as number[]];
  return input as (string | number[])[];
}

export interface EmbeddingsRequest {
  input: EmbeddingsInput;
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  /** The client's end-user id, made opaque by the gateway (as ChatRequest's). */
  user?: string;
}

export interface EmbeddingsResult {
  data: { index: number; embedding: number[] | string }[];
  usage: { prompt_tokens: number } | null;
}

/**
 * Why an upstream call failed. `retryable` failures (connect error, timeout, 5xx, 429, a malformed
 * answer) may succeed on another try; `config` failures (no key, bad URL, 401/403/404 from the
 * upstream) mean the route cannot work as configured. The router fails over to the next route on
 * both. `client` failures (400/413/422 from the upstream for the request itself) go back to the
 * caller; `protocol` is a malformed upstream answer; `aborted` means the caller's signal fired.
 * The message names the route id at most, never the upstream URL or key.
 */
export class UpstreamError extends Error {
  override name = 'UpstreamError';
  constructor(
    readonly kind: 'connect' | 'timeout' | 'http' | 'protocol' | 'config' | 'client' | 'aborted',
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    /**
     * The upstream's own explanation of a rejected request, scrubbed of URLs and the route's key
     * and cut short, so it can be shown to the client (set on `client` failures).
     */
    readonly upstreamMessage?: string,
  ) {
    super(message);
  }
}

export interface ChatCapability {
  /**
   * Whether this provider can honour `req` as asked; the first parameter it cannot, if any. The
   * router asks before it tries a route, and passes over a route that refuses (no call, no health
   * effect): the request may suit the model's next route.
   */
  refuses?(req: ChatRequest): Refusal | undefined;
  complete(route: ResolvedRoute, req: ChatRequest, signal: CancelSignal): Promise<ChatResult>;
  /**
   * Opens a stream. Resolves once the upstream accepted the request (2xx and headers); the iterator
   * then yields chunks as they arrive, and throws UpstreamError on a mid-stream failure.
   * Implementations ask the upstream for usage on streams where the protocol allows it.
   */
  stream(route: ResolvedRoute, req: ChatRequest, signal: CancelSignal): Promise<AsyncIterable<ChatChunk>>;
}

export interface EmbeddingsCapability {
  embed(route: ResolvedRoute, req: EmbeddingsRequest, signal: CancelSignal): Promise<EmbeddingsResult>;
}

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
  prompt?: string;
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

export type JobPoll =
  | { state: 'pending' }
  | { state: 'completed'; transcript: Transcript }
  | { state: 'failed'; message: string };

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

/** Audio as a realtime upstream takes it; the gateway converts the socket's audio to it. */
export interface RealtimeAudioFormat {
  encoding: 'pcm_s16le' | 'mulaw' | 'alaw';
  sampleRate: number;
}

/** A realtime socket's audio as the client sends it, and its language. */
export interface RealtimeOpenRequest {
  sampleRate: 8000 | 16000;
  encoding: 'pcm_s16le' | 'mulaw' | 'alaw' | 'linear32';
  /** BCP-47, or absent for the provider's detection. */
  language?: string;
}

/** One utterance's text from a realtime upstream. */
export interface RealtimeTurn {
  text: string;
}

/**
 * Text a realtime upstream heard before an utterance's answer: `delta` is appended to what came
 * before (OpenAI's deltas); `partial` is the utterance's whole text so far and replaces the previous
 * partial (Sarvam's `transcript.partial`, Deepgram's interim results), `settled` when its words will
 * not change any more (Deepgram's `is_final` pieces).
 */
export type Heard = { kind: 'delta'; text: string } | { kind: 'partial'; text: string; settled: boolean };

/**
 * An open streaming connection to a provider, used in manual-commit mode: the gateway's own VAD
 * decides the turns, `send` streams every sample, `commit` ends an utterance and answers its text
 * (what the protocol hears of it before, through `onHeard`). Several commits may be pending,
 * answered in order. What is heard of audio not yet committed goes to `listen`'s callback.
 */
export interface RealtimeUpstream {
  readonly format: RealtimeAudioFormat;
  send(audio: Uint8Array): void;
  commit(signal: AbortSignal, onHeard: (heard: Heard) => void): Promise<RealtimeTurn>;
  /** Where what is heard of the audio not yet committed goes (one listener; replaced by the next call). */
  listen(onHeard: (heard: Heard) => void): void;
  /** Resolves with why, once the upstream closed or failed (never rejects). */
  readonly ended: Promise<UpstreamError>;
  close(): void;
}

/** A provider's streaming speech-to-text protocol (OpenAI Realtime, Sarvam streaming, Deepgram live). */
export interface RealtimeCapability {
  /** The audio format this provider should get for a socket's audio (G.711 passed through where it takes it). */
  format(req: RealtimeOpenRequest): RealtimeAudioFormat;
  /** Connects; resolves once the upstream is ready for audio. */
  open(route: ResolvedRoute, req: RealtimeOpenRequest, signal: AbortSignal): Promise<RealtimeUpstream>;
}

/** The audio formats of POST /v1/audio/speech (`pcm`: raw s16le mono; `mulaw`: G.711 μ-law, 8 kHz). */
export const SPEECH_FORMATS = ['mp3', 'wav', 'opus', 'flac', 'aac', 'pcm', 'mulaw'] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

export interface SpeakRequest {
  /** The text as the client sent it (the provider may transliterate it for its engine). */
  input: string;
  voice: string;
  /** BCP-47, when the client named one (a voice that speaks several languages). */
  language?: string;
  /** What the client wants; a provider produces it when it can, else what it can (see SpeechAudio). */
  format: SpeechFormat;
  /** For `pcm`: the sample rate asked for (mulaw is always 8000). */
  sampleRate: number;
  speed?: number;
  temperature?: number;
  /** OpenAI's `instructions` (tone, accent): passed to providers that take them. */
  instructions?: string;
}

/**
 * Audio as a provider produces it: the requested format when it can (the gateway passes it through
 * untouched), else raw PCM (`pcm` with its rate) or any container ffmpeg reads, which the gateway
 * converts. `sampleRate` is set for `pcm` and `mulaw`.
 */
export interface SpeechAudio {
  format: SpeechFormat;
  sampleRate?: number;
  /** The audio's bytes as they arrive; throws UpstreamError on a failure. Leaving the loop stops the upstream. */
  chunks: AsyncIterable<Buffer>;
}

/** Text to speech (`POST /v1/audio/speech`). */
export interface SpeakCapability {
  /** As TranscribeCapability's: a voice or language this route's upstream cannot speak. */
  refuses?(req: SpeakRequest, route: ResolvedRoute): Refusal | undefined;
  /** Resolves once the upstream accepted the request; the audio then streams from `chunks`. */
  speak(route: ResolvedRoute, req: SpeakRequest, signal: CancelSignal): Promise<SpeechAudio>;
}

export interface Provider {
  name: string;
  realtime?: RealtimeCapability;
  speak?: SpeakCapability;
  chat?: ChatCapability;
  embeddings?: EmbeddingsCapability;
  transcribe?: TranscribeCapability;
  transcriptionJobs?: TranscriptionJobCapability;
}
