// The realtime capability's port: a provider's streaming speech-to-text protocol (OpenAI Realtime,
// Sarvam streaming, Deepgram live), opened per socket and used in manual-commit mode.
import type { ResolvedRoute, UpstreamError } from '../upstream.ts';
import type { RecognitionContext } from '../../shared/recognition-context.ts';

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
  /** The session's context when the socket opens (its prompt and key terms); the socket keeps it. */
  context?: RecognitionContext;
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
  /**
   * The session's context changed: sent on the open socket where the protocol allows it (OpenAI's
   * session update, Deepgram Nova-3's `Configure` keyterms), for the audio from now on; elsewhere
   * the socket keeps the context it opened with.
   */
  configure(context: RecognitionContext | undefined): void;
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
