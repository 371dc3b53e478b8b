// 16-bit PCM as bytes (s16le, what ffmpeg, pocketsphinx and the wire carry) and as samples.

/** The samples of s16le bytes. Copies only when the bytes are not 2-byte aligned in their buffer. */
export function samplesOf(bytes: Uint8Array): Int16Array {
  if (bytes.length % 2 !== 0) throw new RangeError('PCM16 needs an even number of bytes');
  if (bytes.byteOffset % 2 === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
  return new Int16Array(Uint8Array.from(bytes).buffer);
}

/** The s16le bytes of samples (a view, no copy). */
export function bytesOf(samples: Int16Array): Buffer {
  return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
}
