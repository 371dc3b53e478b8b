// Streaming sample-rate conversion of 16-bit mono PCM (8 kHz telephony ↔ the 16 kHz engines ↔
// OpenAI's 24 kHz), through SpeexDSP's resampler compiled to WASM
// (`@echogarden/speex-resampler-wasm`). Measured here (docs in the README's "Speech engines"):
// quality 5 converts 8→16 kHz at 33 dB SNR against sox's reference, several hundred times real time.
//
// Each Resampler keeps the filter state between chunks, so a stream cut into any chunks gives the
// same samples as one call; `flush()` drains the filter's tail at the end of the stream. The WASM
// module is loaded once (`loadResamplers`, ~20 ms) and passed to whoever makes resamplers.

import createSpeex, { type SpeexResamplerModule } from '@echogarden/speex-resampler-wasm';

export interface ResamplerOptions {
  from: number;
  to: number;
  /** 0 (fastest) … 10 (best); SpeexDSP's default for voice is 3–5. Default 5. */
  quality?: number;
}

export interface Resampler {
  readonly from: number;
  readonly to: number;
  /** The output for this input, as far as the filter can tell yet. */
  process(input: Int16Array): Int16Array;
  /** The rest of the output at the end of the stream; the total is then `inputs × to / from`. */
  flush(): Int16Array;
  /** Frees the WASM memory; the resampler is unusable afterwards. */
  destroy(): void;
}

export interface Resamplers {
  create(options: ResamplerOptions): Resampler;
}

export class ResamplerError extends Error {
  override name = 'ResamplerError';
}

/** Loads the WASM module; `create` then makes resamplers that share it. */
export async function loadResamplers(): Promise<Resamplers> {
  const speex = await createSpeex();
  return { create: (options) => createResampler(speex, options) };
}

function createResampler(speex: SpeexResamplerModule, options: ResamplerOptions): Resampler {
  const { from, to } = options;
  const quality = options.quality ?? 5;
  if (!Number.isInteger(from) || !Number.isInteger(to) || from <= 0 || to <= 0) throw new ResamplerError('sample rates must be positive integers');
  if (!Number.isInteger(quality) || quality < 0 || quality > 10) throw new ResamplerError('quality must be an integer from 0 to 10');
  // Two uint32 cells for the in/out lengths, then an error cell.
  const cells = speex._malloc(12);
  const state = speex._speex_resampler_init(1, from, to, quality, cells + 8);
  if (state === 0) {
    speex._free(cells);
    throw new ResamplerError(`speex_resampler_init failed (error ${speex.HEAP32[(cells + 8) >> 2]})`);
  }
  speex._speex_resampler_skip_zeros(state); // output starts with the first input sample, not the filter's delay
  let inPtr = 0;
  let inCap = 0;
  let outPtr = 0;
  let outCap = 0;
  let consumed = 0; // input samples so far
  let produced = 0; // output samples so far
  let destroyed = false;

  const ensure = (inputs: number, outputs: number): void => {
    if (inputs > inCap) {
      if (inPtr) speex._free(inPtr);
      inCap = Math.max(inputs, 1024);
      inPtr = speex._malloc(inCap * 2);
    }
    if (outputs > outCap) {
      if (outPtr) speex._free(outPtr);
      outCap = Math.max(outputs, 1024);
      outPtr = speex._malloc(outCap * 2);
    }
  };

  const run = (input: Int16Array): Int16Array => {
    if (destroyed) throw new ResamplerError('resampler destroyed');
    const outMax = Math.ceil((input.length * to) / from) + 16;
    ensure(input.length, outMax);
    speex.HEAP16.set(input, inPtr >> 1); // read the heap view after any malloc: memory may have grown
    const out = new Int16Array(outMax);
    let done = 0;
    let made = 0;
    while (done < input.length) {
      speex.HEAPU32[cells >> 2] = input.length - done;
      speex.HEAPU32[(cells + 4) >> 2] = outMax - made;
      const err = speex._speex_resampler_process_int(state, 0, inPtr + done * 2, cells, outPtr + made * 2, cells + 4);
      if (err !== 0) throw new ResamplerError(`speex_resampler_process_int failed (error ${err})`);
      const took = speex.HEAPU32[cells >> 2]!;
      const gave = speex.HEAPU32[(cells + 4) >> 2]!;
      out.set(speex.HEAP16.subarray(outPtr >> 1, (outPtr >> 1) + gave), made);
      done += took;
      made += gave;
      if (took === 0 && gave === 0) break; // cannot happen with room for the output; never spin
    }
    return out.subarray(0, made);
  };

  return {
    from,
    to,
    process(input) {
      const out = run(input);
      consumed += input.length;
      produced += out.length;
      return out;
    },
    flush() {
      // Push the filter's delay line out with silence, and keep only what the real input accounts for.
      const expected = Math.round((consumed * to) / from);
      const tail = run(new Int16Array(speex._speex_resampler_get_input_latency(state) + 1));
      const out = tail.subarray(0, Math.max(0, expected - produced));
      produced += out.length;
      return out;
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      speex._speex_resampler_destroy(state);
      if (inPtr) speex._free(inPtr);
      if (outPtr) speex._free(outPtr);
      speex._free(cells);
    },
  };
}
