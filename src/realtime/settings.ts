// A realtime socket's settings as its client changes them: turn detection (OpenAI's server_vad,
// the listening stage's detector: src/speech/listening.ts) and a `session.update` checked against
// the session as it is (src/realtime/session.ts applies what it takes). The prompt and key terms
// may change at any time: each utterance is recognised with those set when it was committed (an
// upstream streaming socket is sent a change where its protocol takes one: upstream-recogniser.ts).
import { ApiError, echo } from '../errors.ts';
import type { Detection } from '../speech/listening.ts';
import type { Encoding, InputRate } from './decoder.ts';
import { contextOf, type RecognitionContext } from '../shared/recognition-context.ts';

/** OpenAI's server_vad settings; null turns detection off (the client commits). */
export interface TurnDetection {
  type: 'server_vad';
  threshold: number;
  prefix_padding_ms: number;
  silence_duration_ms: number;
}

export const DEFAULT_TURN_DETECTION: TurnDetection = { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 };

/** The listening stage's detector settings for a turn detection (null: the client commits). */
export const detectionOf = (turn: TurnDetection | null): Detection | null =>
  turn ? { threshold: turn.threshold, prefixPaddingMs: turn.prefix_padding_ms, silenceMs: turn.silence_duration_ms } : null;

/**
 * What a client's session update asks (OpenAI's GA `session.update` or its beta
 * `transcription_session.update`, read by the edge). An absent field leaves the setting as it is.
 * Every setting that can be taken is applied; each one that cannot is reported on its own (`param`
 * names the field in the client's own frame). The format and the language may change until the
 * socket's first audio; after it, a change of them is refused (the rest of the update applies).
 */
export interface SessionUpdate {
  turnDetection?: TurnDetection | null;
  /** `sampleRate` null: the socket's own when `encoding` is the same, else the encoding's default (pcm 24 kHz, the others 8 kHz). */
  format?: { encoding: Encoding; sampleRate: InputRate | null; param: string };
  language?: { tag: string; param: string };
  /** `input_audio_transcription.prompt` ('' clears it): the speech's context from the next utterance on. */
  prompt?: string;
  /** `input_audio_transcription.key_terms` (the gateway's extension; [] clears them), checked. */
  keyTerms?: string[];
  /** The model named in the update: it must be the socket's (chosen by its `model` query parameter). */
  model?: { name: string; param: string };
  /** Which event asked: the answer is `session.updated` or `transcription_session.updated`. */
  via: 'session.update' | 'transcription_session.update';
  /** Settings the edge could not read (a bad value, an unknown field), each reported as an error. */
  refused: ApiError[];
  /** How many settings the edge read (taken, or applied above); with none taken and none refused, the update is an echo. */
  taken: number;
}

/** The session's settings an update may change (of its `SessionParams`). */
export interface UpdatableSettings {
  model: string;
  encoding: Encoding;
  sampleRate: InputRate;
  language: string | null;
  /** The prompt and key terms the client set (`input_audio_transcription`); absent: none. */
  context?: RecognitionContext;
}

/**
 * What an update would make of `params`: the settings it changes (`next`), those refused (the
 * edge's and ours) and how many of those read are taken (`applied`). `modelLanguage` is the model's
 * own tag for one asked; it throws ApiError when the model does not offer it.
 */
export function checkUpdate<T extends UpdatableSettings>(
  u: SessionUpdate,
  params: T,
  audioStarted: boolean,
  modelLanguage: (tag: string, param: string) => string,
): { next: T; refused: ApiError[]; applied: number } {
  const refused = [...u.refused];
  let applied = u.taken;
  const refuse = (err: ApiError) => {
    refused.push(err);
    applied--;
  };
  if (u.model && u.model.name !== params.model) {
    refuse(
      new ApiError('invalid_request', `This socket transcribes with '${params.model}' (its 'model' query parameter), not '${echo(u.model.name)}'.`, {
        param: u.model.param,
      }),
    );
  }
  const next = { ...params };
  if (u.format) {
    const { encoding, sampleRate } = u.format;
    const rate = sampleRate ?? (encoding === params.encoding ? params.sampleRate : encoding === 'pcm_s16le' ? 24000 : 8000);
    if ((encoding !== params.encoding || rate !== params.sampleRate) && audioStarted) {
      refuse(
        new ApiError('invalid_request', "The socket's audio format cannot change once audio has arrived; open a new socket for other audio.", {
          param: u.format.param,
        }),
      );
    } else {
      next.encoding = encoding;
      next.sampleRate = rate;
    }
  }
  if (u.language) {
    try {
      const language = modelLanguage(u.language.tag, u.language.param);
      if (language !== params.language && audioStarted) {
        throw new ApiError('invalid_request', "The socket's language cannot change once audio has arrived; open a new socket for another language.", {
          param: u.language.param,
        });
      }
      next.language = language;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      refuse(err);
    }
  }
  if (u.prompt !== undefined || u.keyTerms !== undefined) {
    const context = contextOf({ prompt: u.prompt ?? params.context?.prompt, keyTerms: u.keyTerms ?? params.context?.keyTerms });
    if (context) next.context = context;
    else delete next.context;
  }
  return { next, refused, applied };
}
