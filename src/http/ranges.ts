// A stored blob answered over HTTP with byte ranges (RFC 9110 §14), so a browser's <audio> element
// can seek in a recording without downloading it whole:
// - no Range (or a unit other than bytes, or several ranges: the whole blob is always a valid
//   answer to those) → 200 with the whole blob;
// - one satisfiable range (`bytes=a-b`, `bytes=a-`, `bytes=-n`; an end past the blob is cut to it)
//   → 206 with Content-Range `bytes a-b/size`;
// - a bytes range that is malformed or starts past the end → 416 with Content-Range `bytes */size`
//   and the error envelope (`range_not_satisfiable`).
// Every answer says Accept-Ranges: bytes. The bytes are streamed from the blob port, never whole in memory.
import type { FastifyReply } from 'fastify';
import type { BlobStore } from '../blobs/port.ts';
import { ApiError, echo } from './errors.ts';

export type RangeAsk = { start: number; end: number } | 'whole' | 'unsatisfiable';

/** What a Range header asks of a blob of `size` bytes; `end` inclusive, as Content-Range writes it. */
export function rangeOf(header: string | undefined, size: number): RangeAsk {
  if (header === undefined) return 'whole';
  const m = /^\s*([A-Za-z]+)\s*=\s*(.*)$/.exec(header);
  if (!m || m[1]!.toLowerCase() !== 'bytes') return 'whole';
  const spec = m[2]!.trim();
  if (spec.includes(',')) return 'whole';
  const r = /^(\d{0,15})-(\d{0,15})$/.exec(spec);
  if (!r || (r[1] === '' && r[2] === '')) return 'unsatisfiable';
  if (r[1] === '') {
    const n = Number(r[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(r[1]);
  const end = r[2] === '' ? size - 1 : Math.min(Number(r[2]), size - 1);
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}

/** Answers the blob at `key` (404 `not_found` when it is gone) whole or in the asked range. */
export async function sendBlob(reply: FastifyReply, blobs: BlobStore, key: string, contentType: string, range: string | undefined): Promise<FastifyReply> {
  const gone = () => new ApiError('not_found', 'The recording is no longer stored.');
  const info = await blobs.stat(key);
  if (!info) throw gone();
  reply.header('accept-ranges', 'bytes');
  const ask = rangeOf(range, info.size);
  if (ask === 'unsatisfiable') {
    reply.header('content-range', `bytes */${info.size}`);
    throw new ApiError('range_not_satisfiable', `The range '${echo(range)}' is not within the recording's ${info.size} bytes.`, { param: 'range' });
  }
  const body = await blobs.get(key, ask === 'whole' ? undefined : { start: ask.start, end: ask.end + 1 });
  if (!body) throw gone();
  reply.type(contentType);
  if (ask === 'whole') return reply.header('content-length', info.size).send(body);
  return reply
    .code(206)
    .header('content-range', `bytes ${ask.start}-${ask.end}/${info.size}`)
    .header('content-length', ask.end - ask.start + 1)
    .send(body);
}
