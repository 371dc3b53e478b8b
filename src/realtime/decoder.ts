// The socket's audio, in its declared encoding, to 16-bit linear PCM at the same rate: `pcm_s16le`
// as is, `mulaw` and `alaw` (G.711, one byte a sample) through src/speech/g711.ts, `linear32`
// (32-bit signed little-endian, as Deepgram and Sarvam name it) by keeping the high 16 bits.
// Frames may cut a sample anywhere: the bytes of a partial sample wait for the next frame.
import { g711Decode } from '../speech/g711.ts';

export const ENCODINGS = ['pcm_s16le', 'mulaw', 'alaw', 'linear32'] as const;
export type Encoding = (typeof ENCODINGS)[number];

/** Rates a socket takes. 24 kHz (OpenAI's `pcm16`) is resampled to 16 kHz as it arrives. */
export type InputRate = 8000 | 16000 | 24000;

/** The rate a socket's audio is processed at (VAD, buffer, recognisers). */
export const workingRate = (rate: InputRate): 8000 | 16000 => (rate === 8000 ? 8000 : 16000);

export const bytesPerSample = (encoding: Encoding): number => (encoding === 'pcm_s16le' ? 2 : encoding === 'linear32' ? 4 : 1);

export interface AudioDecoder {
  /** The samples these bytes complete (possibly none). */
  decode(bytes: Uint8Array): Int16Array;
  /** Bytes of a partial sample waiting for the next frame. */
  readonly pending: number;
}

export function createDecoder(encoding: Encoding): AudioDecoder {
  const width = bytesPerSample(encoding);
  let carry: Buffer | null = null;
  return {
    get pending() {
      return carry?.length ?? 0;
    },
    decode(input) {
      let bytes = carry ? Buffer.concat([carry, input]) : Buffer.from(input.buffer, input.byteOffset, input.length);
      carry = null;
      const rest = bytes.length % width;
      if (rest > 0) {
        carry = Buffer.from(bytes.subarray(bytes.length - rest));
        bytes = bytes.subarray(0, bytes.length - rest);
      }
      const n = bytes.length / width;
      if (encoding === 'mulaw' || encoding === 'alaw') return g711Decode(encoding, bytes);
      const out = new Int16Array(n);
      if (encoding === 'pcm_s16le') for (let i = 0; i < n; i++) out[i] = bytes.readInt16LE(i * 2);
      else for (let i = 0; i < n; i++) out[i] = bytes.readInt32LE(i * 4) >> 16;
      return out;
    },
  };
}
