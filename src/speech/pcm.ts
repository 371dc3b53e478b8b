// 16-bit PCM as bytes (s16le, what ffmpeg, pocketsphinx and the wire carry) and as samples.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

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

/**
 * A file of s16le samples read a span at a time (for the diarizer: hours of audio stay on disk).
 * The caller closes it.
 */
export function openPcmFile(path: string): { samples: number; read(from: number, to: number): Int16Array; close(): void } {
  const fd = openSync(path, 'r');
  const samples = Math.floor(fstatSync(fd).size / 2);
  return {
    samples,
    read(from, to) {
      const out = new Int16Array(Math.max(0, Math.min(to, samples) - from));
      const bytes = Buffer.from(out.buffer);
      for (let done = 0; done < bytes.length; ) {
        const n = readSync(fd, bytes, done, bytes.length - done, from * 2 + done);
        if (n === 0) break;
        done += n;
      }
      return out;
    },
    close: () => closeSync(fd),
  };
}

/** The parts one after another, as one run of samples. */
export function concatSamples(parts: readonly Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
