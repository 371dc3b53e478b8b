// A clip of 8 kHz telephone speech in the two encodings carriers take: PCM16 little-endian (kept;
// Exotel's) and μ-law (Twilio's), derived from it once, when first asked for.
import { g711Encode } from './g711.ts';
import { samplesOf } from './pcm.ts';

/** A byte of silence in each encoding (a clip padded to a carrier's chunk). */
export const SILENCE_BYTE: Readonly<Record<'mulaw' | 'pcm16', number>> = { mulaw: 0xff, pcm16: 0 };

export class SpeechClip {
  private mu: Buffer | null = null;

  constructor(readonly pcm16: Buffer) {
    if (pcm16.length % 2 !== 0) throw new RangeError('PCM16 needs an even number of bytes');
  }

  get mulaw(): Buffer {
    return (this.mu ??= Buffer.from(g711Encode('mulaw', samplesOf(this.pcm16))));
  }

  /** The clip in `audio`'s encoding. */
  as(audio: 'mulaw' | 'pcm16'): Buffer {
    return audio === 'mulaw' ? this.mulaw : this.pcm16;
  }
}
