// A multipart/form-data body (RFC 7578) with text fields and one file streamed from disk: the file
// is read as the socket takes it, never held in memory, and the length is known up front (so the
// request carries Content-Length, which upstreams such as OpenAI's want for uploads). A file already
// in memory (`data`: a realtime utterance's WAV) is sent from there.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';

export interface MultipartFile {
  /** The form field's name (`file`). */
  field: string;
  /** The name sent in Content-Disposition (the upstream may read the format from its extension). */
  filename: string;
  contentType: string;
  /** The local file to stream. */
  path: string;
  /** Its bytes in memory, sent instead of reading `path`. */
  data?: Uint8Array;
}

export interface StreamedBody {
  contentType: string;
  length: number;
  /** Single use: a body for one request. */
  stream: Readable;
}

/**
 * Builds the body. `fields` are sent in order before the file; a name may repeat
 * (`timestamp_granularities[]`). Names and the file name are quoted as the WHATWG HTML standard
 * does (`"`, CR and LF percent-encoded), so no value can add a header or a part.
 */
export async function multipartBody(fields: readonly (readonly [string, string])[], file: MultipartFile): Promise<StreamedBody> {
  const size = file.data ? file.data.length : (await stat(file.path)).size;
  const boundary = `----gateway${randomBytes(16).toString('hex')}`;
  const text = fields.map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"\r\n\r\n${value}\r\n`).join('');
  const head = Buffer.from(
    `${text}--${boundary}\r\nContent-Disposition: form-data; name="${quote(file.field)}"; filename="${quote(file.filename)}"\r\n` +
      `Content-Type: ${headerValue(file.contentType)}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length: head.length + size + tail.length,
    stream: Readable.from(parts(head, file, tail), { objectMode: false }),
  };
}

/** A file as a whole request body (Deepgram's raw upload, a blob PUT). */
export async function fileBody(path: string, contentType: string, data?: Uint8Array): Promise<StreamedBody> {
  if (data) return { contentType: headerValue(contentType), length: data.length, stream: Readable.from([data], { objectMode: false }) };
  const size = (await stat(path)).size;
  return { contentType: headerValue(contentType), length: size, stream: createReadStream(path) };
}

async function* parts(head: Buffer, file: MultipartFile, tail: Buffer): AsyncGenerator<Uint8Array> {
  yield head;
  // Leaving early (the request aborted) returns this generator, which destroys the file stream.
  if (file.data) yield file.data;
  else yield* createReadStream(file.path);
  yield tail;
}

function quote(s: string): string {
  return s.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** A content type fit for a header line; anything odd becomes application/octet-stream. */
function headerValue(type: string): string {
  return /^[\w.+-]+\/[\w.+-]+(?:\s*;\s*[\w.+-]+=[\w.+-]+)*$/.test(type) ? type : 'application/octet-stream';
}
