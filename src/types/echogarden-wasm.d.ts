// The two Emscripten builds we use ship no types: the functions and heap views we call, as their C
// headers declare them (SpeexDSP `speex_resampler.h`, libfvad `fvad.h`). Pointers are numbers.

interface EmscriptenHeaps {
  readonly HEAPU8: Uint8Array;
  readonly HEAP16: Int16Array;
  readonly HEAP32: Int32Array;
  readonly HEAPU32: Uint32Array;
  _malloc(bytes: number): number;
  _free(pointer: number): void;
}

declare module '@echogarden/speex-resampler-wasm' {
  export interface SpeexResamplerModule extends EmscriptenHeaps {
    _speex_resampler_init(channels: number, inRate: number, outRate: number, quality: number, errPointer: number): number;
    _speex_resampler_process_int(state: number, channel: number, input: number, inLenPointer: number, output: number, outLenPointer: number): number;
    _speex_resampler_skip_zeros(state: number): number;
    _speex_resampler_get_input_latency(state: number): number;
    _speex_resampler_destroy(state: number): void;
    _speex_resampler_strerror(code: number): number;
  }
  const create: () => Promise<SpeexResamplerModule>;
  export default create;
}

declare module '@echogarden/fvad-wasm' {
  export interface FvadModule extends EmscriptenHeaps {
    _fvad_new(): number;
    _fvad_free(handle: number): void;
    _fvad_reset(handle: number): void;
    /** 0 (quality) … 3 (very aggressive); -1 on an invalid mode. */
    _fvad_set_mode(handle: number, mode: number): number;
    /** 8000, 16000, 32000 or 48000; -1 otherwise. */
    _fvad_set_sample_rate(handle: number, rate: number): number;
    /** 1 voice, 0 no voice, -1 invalid frame length (10, 20 or 30 ms only). */
    _fvad_process(handle: number, frame: number, samples: number): number;
  }
  const create: () => Promise<FvadModule>;
  export default create;
}
