// WAV (RIFF) in both directions: a 16-bit mono PCM WAV of samples (what an utterance is sent
// upstream as), and the header of a WAV an upstream answers with, read as the bytes arrive, so
// the PCM or μ-law inside can be streamed on without its header.

export function wavOf(samples: Int16Array, sampleRate: number): Buffer {
  const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  return Buffer.concat([pcmWavHeader(data.length, sampleRate), data]);
}

/** The 44-byte header of a 16-bit PCM WAV of `dataBytes` bytes (`channels` interleaved: a call's recording is stereo). */
export function pcmWavHeader(dataBytes: number, sampleRate: number, channels = 1): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2 * channels, 28); // byte rate
  header.writeUInt16LE(2 * channels, 32); // block align
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}

/** WAVE_FORMAT_PCM and WAVE_FORMAT_MULAW; WAVE_FORMAT_EXTENSIBLE names one of them in its sub-format. */
export const WAV_PCM = 1;
export const WAV_MULAW = 7;
const WAV_EXTENSIBLE = 0xfffe;

export interface WavHeader {
  /** WAV_PCM, WAV_MULAW, or another format tag. */
  format: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  /** Where the `data` chunk's bytes start. Its declared size is not trusted (streamed WAVs say 0 or 0xFFFFFFFF). */
  dataOffset: number;
}

/** A header longer than this is not one we read. */
const MAX_HEADER_BYTES = 64 << 10;

/**
 * Reads a RIFF/WAVE header up to its `data` chunk: the header; null when the bytes are not a WAV
 * (or its header is malformed or longer than 64 KiB); 'more' when more bytes are needed to tell.
 */
export function readWavHeader(buf: Buffer): WavHeader | null | 'more' {
  if (buf.length < 12) return 'RIFF'.startsWith(buf.subarray(0, 4).toString('latin1')) ? 'more' : null;
  if (buf.toString('latin1', 0, 4) !== 'RIFF' || buf.toString('latin1', 8, 12) !== 'WAVE') return null;
  let fmt: Omit<WavHeader, 'dataOffset'> | null = null;
  let at = 12;
  for (;;) {
    if (at + 8 > buf.length) return buf.length >= MAX_HEADER_BYTES ? null : 'more';
    const id = buf.toString('latin1', at, at + 4);
    const size = buf.readUInt32LE(at + 4);
    if (id === 'data') return fmt ? { ...fmt, dataOffset: at + 8 } : null;
    const next = at + 8 + size + (size % 2);
    if (next > MAX_HEADER_BYTES) return null;
    if (id === 'fmt ') {
      if (size < 16) return null;
      if (at + 8 + size > buf.length) return 'more';
      let format = buf.readUInt16LE(at + 8);
      if (format === WAV_EXTENSIBLE && size >= 40) format = buf.readUInt16LE(at + 8 + 24);
      fmt = { format, channels: buf.readUInt16LE(at + 10), sampleRate: buf.readUInt32LE(at + 12), bitsPerSample: buf.readUInt16LE(at + 22) };
    }
    at = next;
  }
}

/**
 * Splits a byte stream that may be a WAV into its header (null when it is not a WAV), the
 * header's bytes, and the bytes after it, reading only as far as the header goes. A stream that
 * ends before a header is complete is taken as not a WAV: a null header, every byte in the body.
 */
export async function splitWav(chunks: AsyncIterable<Buffer>): Promise<{ header: WavHeader | null; headerBytes: Buffer; body: AsyncIterable<Buffer> }> {
  const it = chunks[Symbol.asyncIterator]();
  let head: Buffer = Buffer.alloc(0);
  let header: WavHeader | null | 'more' = 'more';
  let ended = false;
  try {
    while (header === 'more') {
      const next = await it.next();
      if (next.done) {
        ended = true;
        header = null;
        break;
      }
      head = head.length === 0 ? next.value : Buffer.concat([head, next.value]);
      header = readWavHeader(head);
    }
  } catch (err) {
    await it.return?.();
    throw err;
  }
  const rest = header ? head.subarray(header.dataOffset) : head;
  async function* body(): AsyncGenerator<Buffer> {
    try {
      if (rest.length > 0) yield rest;
      if (ended) return;
      for (;;) {
        const next = await it.next();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      await it.return?.();
    }
  }
  return { header, headerBytes: header ? head.subarray(0, header.dataOffset) : Buffer.alloc(0), body: body() };
}
