// Audio uploads (multipart/form-data) for the transcription endpoints: the one file is streamed into
// the blob store as it arrives (never whole in memory), the other fields are collected as strings.
//
// Size, as a proxy in front of the API would enforce it: an upload whose Content-Length says it is
// over the limit is answered 413 with a plain page before authentication and before any of its body
// is read; one sent without a length (chunked) is cut as soon as its file passes the limit. Either
// way the answer says `Connection: close`, and the connection then lingers as nginx's does: the
// rest of the body is read and dropped (never stored) for at most LINGER_MS and LINGER_BYTES, so a
// client still writing it finishes and reads the 413 instead of a reset (which clients report as a
// connection error, and retry); a client that never stops is cut at either bound.
//
// A text field over 64 KiB is refused (400 naming it), never cut. A body that is not well-formed
// multipart (no boundary in its Content-Type, no closing boundary) is a 400 `invalid_request` saying
// which. An upload whose connection closed before its body arrived (the client left, or Node's
// request timeout already answered it 408: client-errors.ts) is logged at info as the client's
// doing, and nothing is written: nobody is there to read it.
import multipart from '@fastify/multipart';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BlobStore, Upload } from '../blobs/port.ts';
import { BlobTooLargeError } from '../blobs/port.ts';
import type { App } from './types.ts';
import { ApiError } from './errors.ts';
import { KEY_TERMS_MAX } from '../shared/recognition-context.ts';

/** The spec's upload limit: 25 MB of audio. */
export const UPLOAD_LIMIT_BYTES = 25 * 1024 * 1024;
/** What the multipart framing (boundaries, part headers, the other fields) may add to the file. */
const FORM_OVERHEAD_BYTES = 64 * 1024;
/**
 * The most text fields a form may hold: the endpoints' dozen, plus a repeated field's values (the
 * key-terms extension's `key_terms[]`, up to KEY_TERMS_MAX: one more is ours to refuse, by name).
 */
const MAX_FIELDS = 32 + KEY_TERMS_MAX + 1;
/** The longest text field (busboy cuts a longer value; the form is then refused naming the field). */
const FIELD_LIMIT_BYTES = 64 * 1024;

/**
 * How long, and how many more bytes of body, an over-limit upload's connection is read and dropped
 * after the 413 (nginx: lingering_time). 32 MiB covers the rest of a body a little over the limit
 * (a 27 MB file whose length was declared is refused with nothing read), at loopback or LAN speed.
 */
const LINGER_MS = 5000;
const LINGER_BYTES = 32 * 1024 * 1024;

const TOO_LARGE_PAGE =
  '<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request Entity Too Large</h1></center>\r\n' +
  `<center>Audio uploads are limited to ${UPLOAD_LIMIT_BYTES / 1024 / 1024} MB.</center>\r\n</body>\r\n</html>\r\n`;

/** Thrown while reading an upload past the limit; the route answers with `sendTooLarge`. */
export class UploadTooLargeError extends Error {
  constructor() {
    super('upload too large');
    this.name = 'UploadTooLargeError';
  }
}

/** Thrown when the connection closed before the upload's body arrived; the route answers nothing (`uploadFailed`). */
export class UploadAbortedError extends Error {
  constructor() {
    super('upload aborted');
    this.name = 'UploadAbortedError';
  }
}

function sendTooLarge(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  lingerAfterAnswer(request);
  return reply.code(413).header('connection', 'close').type('text/html; charset=utf-8').send(TOO_LARGE_PAGE);
}

/**
 * The rest of the request's body is read and dropped from now on; once the answer is written, the
 * connection is half-closed (our FIN after the answer) and closed when the client closes its side,
 * or past LINGER_MS or LINGER_BYTES more of body. Node closes a `Connection: close` socket as soon as its answer is written
 * (`socket.destroySoon()`); with body left unread the kernel then resets the connection, and a
 * client still writing it gets EPIPE or ECONNRESET, often before it has read the answer. So that
 * one call is replaced, on this socket only, by a close that waits.
 */
function lingerAfterAnswer(request: FastifyRequest): void {
  const raw = request.raw;
  const socket = raw.socket as Socket | null;
  if (!socket || socket.destroyed || raw.complete) return;
  let dropped = 0;
  const cut = () => socket.destroy();
  const timer = setTimeout(cut, LINGER_MS).unref();
  socket.once('close', () => clearTimeout(timer));
  raw.unpipe(); // from the multipart parser, when the file was being read
  raw.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_BYTES) cut();
  });
  raw.resume();
  // Once the answer is out: our FIN after it, and the socket closes when the client's end comes (or the timer, or the cap).
  socket.destroySoon = function lingeringClose(this: Socket) {
    if (this.writable) this.end();
  };
}

/**
 * What an upload route does with a failure: the 413 page for a body past the limit; for an upload
 * whose connection closed before its body arrived, an info line and no answer; anything else goes
 * on to the error handler, with `Connection: close` when the body was not read to its end (the
 * connection cannot carry another request).
 */
export function uploadFailed(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err instanceof UploadTooLargeError) return sendTooLarge(request, reply);
  if (err instanceof UploadAbortedError) {
    // The client left, or Node's parser refused the rest (a 408 for its slowness, a 400 for a bad
    // chunk) and answered on the socket itself: client-errors.ts.
    request.log.info({ received_bytes: request.raw.socket.bytesRead }, 'upload aborted: the connection closed before the body arrived');
    return reply.hijack();
  }
  if (!request.raw.readableEnded) reply.header('connection', 'close');
  throw err;
}

/**
 * busboy's errors for a body that is not well-formed multipart (it gives them no code, only these
 * messages), and what the client is told.
 */
const MALFORMED: [RegExp, string][] = [
  [/^Multipart: Boundary not found$/, 'its Content-Type names no boundary (multipart/form-data; boundary=…)'],
  [/^Unexpected end of multipart data$|terminated early due to unexpected end of multipart data$/, 'it ends before its closing boundary (--boundary--)'],
];

function malformed(err: unknown): string | undefined {
  const message = (err as { message?: unknown }).message;
  if (typeof message !== 'string') return undefined;
  return MALFORMED.find(([pattern]) => pattern.test(message))?.[1];
}

/**
 * Makes `scope` (an encapsulated plugin holding only the upload routes) accept multipart bodies, and
 * refuse, before authentication, those whose declared length is over the limit.
 */
export async function acceptUploads(scope: App, maxBytes = UPLOAD_LIMIT_BYTES): Promise<void> {
  await scope.register(multipart, {
    // The blob store counts the file's bytes itself and stops at maxBytes; busboy's own limit is a backstop.
    limits: { fileSize: maxBytes + 1, files: 1, fields: MAX_FIELDS, fieldSize: FIELD_LIMIT_BYTES, parts: MAX_FIELDS + 8, headerPairs: 100 },
    throwFileSizeLimit: true,
  });
  scope.addHook('onRequest', async (request, reply) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes + FORM_OVERHEAD_BYTES) return sendTooLarge(request, reply);
  });
}

export interface UploadForm {
  file: Upload | null;
  /** Every other field by name; a repeated field (`timestamp_granularities[]`) collects its values. */
  fields: Map<string, string[]>;
}

/**
 * Reads the multipart body: the part named `file` into the blob store under `key`, the rest as
 * fields. Refuses a second file, a file under another name, and non-multipart bodies (400).
 */
/**
 * The file's bytes as they come; past `maxBytes` the request stops being read at once (the blob store
 * then refuses the upload), so a client streaming far more is cut where the limit is, not after the
 * refusal has been cleaned up and written (which let tens of MB more in on loopback).
 */
async function* stopReadingPast(file: AsyncIterable<Buffer>, raw: FastifyRequest['raw'], maxBytes: number): AsyncGenerator<Buffer> {
  let seen = 0;
  for await (const chunk of file) {
    seen += chunk.length;
    if (seen > maxBytes) {
      raw.unpipe();
      raw.pause();
    }
    yield chunk;
  }
}

export async function readUpload(request: FastifyRequest, blobs: BlobStore, key: string, maxBytes = UPLOAD_LIMIT_BYTES): Promise<UploadForm> {
  if (!request.isMultipart()) {
    throw new ApiError('invalid_request', "Send the audio as multipart/form-data with the recording in the field 'file'.", { param: 'file' });
  }
  const fields = new Map<string, string[]>();
  let file: Upload | null = null;
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file' || file) {
          part.file.resume();
          throw new ApiError('invalid_request', `Unexpected file in field '${part.fieldname}': send one recording, in the field 'file'.`, {
            param: part.fieldname,
          });
        }
        const stored = await blobs.put(key, stopReadingPast(part.file, request.raw, maxBytes), { maxBytes });
        file = { key, filename: part.filename || 'audio', bytes: stored.size, sha256: stored.sha256 };
      } else {
        if (part.valueTruncated) {
          throw new ApiError(
            'invalid_request',
            `The field '${part.fieldname}' is longer than ${FIELD_LIMIT_BYTES / 1024} KiB, the most a form field may hold.`,
            { param: part.fieldname },
          );
        }
        const value = typeof part.value === 'string' ? part.value : String(part.value);
        const list = fields.get(part.fieldname);
        if (list) list.push(value);
        else fields.set(part.fieldname, [value]);
      }
    }
  } catch (err) {
    if (file) await blobs.delete(key).catch(() => {});
    if (err instanceof BlobTooLargeError || (err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw new UploadTooLargeError();
    // The connection closed mid-body (busboy then reports a premature close or truncated data).
    if (!request.raw.complete && request.raw.destroyed) throw new UploadAbortedError();
    if (err instanceof ApiError) throw err;
    const why = malformed(err);
    if (why) throw new ApiError('invalid_request', `The multipart body could not be read: ${why}.`);
    const code = (err as { code?: string }).code;
    if (code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT')
      throw new ApiError('invalid_request', `The multipart body holds more than ${MAX_FIELDS} fields.`);
    if (typeof code === 'string' && code.startsWith('FST_')) {
      throw new ApiError('invalid_request', `The multipart body could not be read: ${(err as Error).message}.`, { param: 'file' });
    }
    throw err;
  }
  return { file, fields };
}
