// G.711 (telephony's 8 kHz companded audio, one byte a sample): μ-law (PCMU, North America and
// Japan) and A-law (PCMA, elsewhere), to and from 16-bit linear PCM, through `alawmulaw`.
// Stateless: any chunking of a stream gives the same bytes.

import alawmulaw from 'alawmulaw';

export type G711Law = 'mulaw' | 'alaw';
export const G711_SAMPLE_RATE = 8000;

export function g711Decode(law: G711Law, bytes: Uint8Array): Int16Array {
  return law === 'mulaw' ? alawmulaw.mulaw.decode(bytes) : alawmulaw.alaw.decode(bytes);
}

export function g711Encode(law: G711Law, samples: Int16Array): Uint8Array {
  return law === 'mulaw' ? alawmulaw.mulaw.encode(samples) : alawmulaw.alaw.encode(samples);
}
