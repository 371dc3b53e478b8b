// POST /v1/audio/speech, the metered path:
//   check against the model (voice, input length, language) → Meter.begin (hold the input's price)
//   → router.speak (failover before the first audio byte) → convert to the asked format, first
//   bytes pulled before anything is written (a failure until then is an ordinary JSON error)
//   → the route streams and reports what it handed to the client → settle (or release) once.
//
// Billing: `cents_per_1k_chars` of the input's characters (Unicode code points), on success. A
// stream that ends early (the client left, or the upstream failed after its first byte) is charged
// for the characters whose audio was sent, counted as follows. Nothing sent: nothing charged. Raw
// formats (pcm, mulaw, and every SSE stream): the seconds handed to the client's connection, as a
// share of the whole audio when it had all been produced (characters × sent ÷ produced, rounded
// up); when it had not, at a speaking rate of 15 characters a second × `speed` (rounded up, at most
// the input). Container formats (mp3, wav, opus, flac, aac) cannot be timed from their bytes: once
// any byte was sent the whole input is charged.
import { ApiError, echo } from '../errors.ts';
import type { MeteredCall } from '../metering/meter.ts';
import type { ModelDoc } from '../models/types.ts';
import { priceOfCharacters } from '../billing/pricing.ts';
import { maxInputChars } from '../models/catalog.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';
import type { CancelSignal } from '../providers/cancel.ts';
import type { ResolvedRoute, SpeakRequest, SpeechFormat } from '../providers/types.ts';
import type { Resamplers } from '../speech/resample.ts';
import { matchLanguage } from '../speech/languages.ts';
import type { GatewayDeps } from '../metering/endpoints.ts';
import { toApiError, unservedStatus } from '../metering/outcomes.ts';
import { convertSpeech, isRaw, type Target } from '../speech/convert.ts';
import { CONTENT_TYPES, DEFAULT_PCM_RATE, rawBytesPerSecond } from './formats.ts';

/** Characters a second of speech at speed 1, for a stream cut before its audio was all produced. */
export const CHARS_PER_SECOND = 15;

export interface SpeechBody {
  model: string;
  input: string;
  voice: string;
  response_format?: SpeechFormat;
  stream_format?: 'sse' | 'audio';
  sample_rate?: number;
  speed?: number;
  temperature?: number;
  language?: string;
  instructions?: string;
}

export interface PreparedSpeech {
  call: MeteredCall;
  request: SpeakRequest;
  routes: ResolvedRoute[];
  characters: number;
  target: Target;
  sse: boolean;
}

/** How a stream ended, as the route saw it. */
export type SpeechEnd = 'done' | 'client_closed' | 'failed';

export interface SpeechStream {
  contentType: string;
  format: SpeechFormat;
  /** Of raw audio (pcm, mulaw); null for containers. */
  sampleRate: number | null;
  characters: number;
  /** The audio in the client's format, first chunk included; throws ApiError on a later failure. */
  chunks: AsyncIterable<Buffer>;
  /** The route reports each chunk it handed to the client's connection. */
  sent(bytes: number): void;
  /** Settles or releases the call, once, by what was sent (see the header). */
  end(how: SpeechEnd): Promise<void>;
}

export interface SynthesisDeps extends GatewayDeps {
  resamplers(): Promise<Resamplers>;
}

export class SpeechSynthesis {
  constructor(private readonly deps: SynthesisDeps) {}

  async prepare(principal: ApiKeyPrincipal, body: SpeechBody, requestId: string): Promise<PreparedSpeech> {
    const characters = [...body.input].length;
    if (body.input.trim().length === 0) throw new ApiError('missing_input', "The field 'input' is empty: give the text to speak.", { param: 'input' });
    const call = await this.deps.meter.begin(principal, {
      model: body.model,
      type: 'tts',
      requestId,
      check: (model) => checkAgainstModel(model, body, characters),
      estimate: (model) => Math.ceil(priceOfCharacters(model.pricing, characters)),
    });
    const sse = body.stream_format === 'sse';
    const asked = body.response_format ?? 'mp3';
    // Streamed audio is normalized to raw: μ-law when asked, else PCM.
    const format: SpeechFormat = sse ? (asked === 'mulaw' ? 'mulaw' : 'pcm') : asked;
    const target: Target = { format, sampleRate: format === 'mulaw' ? 8000 : (body.sample_rate ?? DEFAULT_PCM_RATE) };
    const request: SpeakRequest = { input: body.input, voice: body.voice, format, sampleRate: target.sampleRate };
    if (call.checked !== undefined) request.language = call.checked;
    if (body.speed !== undefined) request.speed = body.speed;
    if (body.temperature !== undefined) request.temperature = body.temperature;
    if (body.instructions !== undefined) request.instructions = body.instructions;
    return { call, request, routes: this.deps.resolveRoutes(call.model), characters, target, sse };
  }

  /** Opens the audio; until it resolves, a failure releases the hold and throws the client's error. */
  async open(prep: PreparedSpeech, signal: CancelSignal): Promise<SpeechStream> {
    const { call, target } = prep;
    let served;
    try {
      served = await this.deps.router.speak(prep.routes, prep.request, signal);
    } catch (err) {
      await call.release(unservedStatus(err, signal), { characters: 0 });
      throw toApiError(err);
    }
    const { route, audio, first, rest } = served;
    const source = (async function* () {
      if (first) yield first;
      yield* rest;
    })();
    // The converter's child process (ffmpeg) is killed when the client leaves.
    const abort = new AbortController();
    const onCancel = () => abort.abort(new Error('cancelled'));
    signal.addEventListener('abort', onCancel, { once: true });
    if (signal.aborted) onCancel();
    const converted = convertSpeech(audio, source, target, { resamplers: this.deps.resamplers, signal: abort.signal });
    let head: IteratorResult<Buffer>;
    try {
      head = await converted.next();
      if (head.done) throw new ApiError('model_unavailable', 'The upstream produced no audio.');
    } catch (err) {
      await converted.return(undefined).catch(() => {});
      signal.removeEventListener('abort', onCancel);
      await call.release(signal.aborted ? 'client_closed' : 'upstream_failed', { route: route.id, characters: 0 });
      throw err instanceof ApiError ? err : new ApiError('model_unavailable', 'The upstream audio could not be converted.');
    }
    let produced = head.value.length;
    let complete = false;
    let sentBytes = 0;
    const chunks = (async function* () {
      yield head.value;
      try {
        for await (const c of { [Symbol.asyncIterator]: () => converted }) {
          produced += c.length;
          yield c;
        }
        complete = true;
      } catch (err) {
        if (signal.aborted) throw err;
        throw new ApiError('model_unavailable', 'The upstream failed during the audio.');
      }
    })();
    const billed = (): number => {
      if (complete && sentBytes >= produced) return prep.characters;
      if (sentBytes === 0) return 0;
      if (!isRaw(target.format)) return prep.characters;
      const share = complete
        ? sentBytes / produced
        : ((sentBytes / rawBytesPerSecond(target.format, target.sampleRate)) * CHARS_PER_SECOND * (prep.request.speed ?? 1)) / prep.characters;
      return Math.min(prep.characters, Math.ceil(prep.characters * share - 1e-9));
    };
    return {
      contentType: CONTENT_TYPES[target.format],
      format: target.format,
      sampleRate: isRaw(target.format) ? target.sampleRate : null,
      characters: prep.characters,
      chunks,
      sent: (bytes) => void (sentBytes += bytes),
      end: async (how) => {
        signal.removeEventListener('abort', onCancel);
        const characters = how === 'done' ? prep.characters : billed();
        const status = how === 'done' ? 'ok' : how === 'client_closed' ? 'client_closed' : 'error';
        if (characters === 0) return call.release(how === 'client_closed' ? 'client_closed' : 'upstream_failed', { route: route.id, characters: 0 });
        await call.settle({ route: route.id, characters, costMicrocents: priceOfCharacters(call.model.pricing, characters), status }, { answer: true });
      },
    };
  }
}

/** The voice, length and language rules of the model; the language as the model names it. */
function checkAgainstModel(model: ModelDoc, body: SpeechBody, characters: number): string | undefined {
  const voices = model.voices ?? [];
  if (!voices.includes(body.voice)) {
    throw new ApiError('voice_not_supported', `The model '${model._id}' has no voice '${echo(body.voice)}'; its voices: ${voices.join(', ') || 'none'}.`, {
      param: 'voice',
    });
  }
  const max = maxInputChars(model);
  if (characters > max)
    throw new ApiError('input_too_long', `The input has ${characters} characters; the model '${model._id}' takes at most ${max}.`, { param: 'input' });
  if (body.language === undefined) return undefined;
  const offered = model.languages ?? [];
  const language = matchLanguage(body.language, offered);
  if (language === null)
    throw new ApiError('language_not_supported', `The model '${model._id}' speaks ${offered.join(', ') || 'no listed languages'}, not '${body.language}'.`, {
      param: 'language',
    });
  return language;
}
