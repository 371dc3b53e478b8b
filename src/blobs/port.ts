// The blob port: large immutable bytes the store's documents only reference (uploaded recordings up
// to 25 MB, transcripts, synthesized audio). Actor snapshots stay small (64 KiB at most); what is
// big lives here, under a key the actor keeps in its context.
//
// Two adapters, one contract suite (test/blobs/contract.ts): files under `DATA_DIR/blobs` on the
// embedded default, GridFS through the official driver on MongoDB.
//
// Semantics every adapter keeps:
// - `put` is acknowledged only once the whole blob is durable (fsync of the file and of its
//   directory; GridFS with the deployment's write concern), and is atomic: a reader sees the old
//   blob or the new one, never a prefix; a crash mid-write leaves no blob (and no garbage once the
//   adapter reopens).
// - A `put` over `maxBytes` is refused with BlobTooLargeError as soon as the count passes it, and
//   nothing is stored. A failing source stream fails the put, storing nothing.
// - Keys are paths of safe segments (`jobs/<id>/audio`); anything else is InvalidBlobKeyError, so a
//   key can never leave the blob directory.

import type { Readable } from 'node:stream';

export interface BlobInfo {
  key: string;
  /** Bytes. */
  size: number;
  createdAt: Date;
}

/** What `put` answers: the blob, and the hex SHA-256 of its bytes (computed while writing). */
export interface PutResult extends BlobInfo {
  sha256: string;
}

export interface PutOptions {
  /** Refuse (BlobTooLargeError) once the source passes this many bytes. */
  maxBytes?: number;
  /** Aborts the write (nothing stored). */
  signal?: AbortSignal;
}

/** An uploaded file (a recording sent to the transcription endpoints), once it is in the blob store. */
export interface Upload {
  /** Where the file now is in the blob store (the caller deletes it when done with it). */
  key: string;
  filename: string;
  bytes: number;
  sha256: string;
}

/** A byte range, `end` exclusive, as `Blob.slice`; `end` past the size reads to the end. */
export interface ByteRange {
  start: number;
  end?: number;
}

export interface BlobStore {
  readonly kind: 'fs' | 'gridfs';
  /** Stores `source` whole under `key`, replacing what was there; resolves once durable. */
  put(key: string, source: AsyncIterable<Uint8Array> | Uint8Array, options?: PutOptions): Promise<PutResult>;
  /** Size and time of the blob, or null. */
  stat(key: string): Promise<BlobInfo | null>;
  /** A stream of the blob's bytes (or of a range), or null when there is no such blob. */
  get(key: string, range?: ByteRange): Promise<Readable | null>;
  /**
   * Runs `use` with a local file path holding the blob (tools such as ffmpeg need to seek in an MP4
   * whose index sits at the end): the file itself on disk, a temporary copy removed afterwards on
   * GridFS. Null when there is no such blob (`use` is not called).
   */
  withFile<T>(key: string, use: (path: string) => Promise<T>): Promise<T | null>;
  /** True when a blob was removed. */
  delete(key: string): Promise<boolean>;
  /** Blobs whose key starts with `prefix`, in key order (at most `limit`, default 1000). */
  list(prefix: string, options?: { limit?: number }): Promise<BlobInfo[]>;
  close(): Promise<void>;
}

export class InvalidBlobKeyError extends Error {
  constructor(readonly key: string) {
    super('invalid blob key: segments of letters, digits, dot, dash and underscore, joined by "/"');
    this.name = 'InvalidBlobKeyError';
  }
}

export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`blob larger than ${maxBytes} bytes`);
    this.name = 'BlobTooLargeError';
  }
}

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const MAX_SEGMENTS = 8;

/** Throws InvalidBlobKeyError unless `key` is 1–8 safe segments (no `.`/`..`, no leading dot). */
export function checkBlobKey(key: string): string {
  const parts = typeof key === 'string' ? key.split('/') : [];
  if (parts.length === 0 || parts.length > MAX_SEGMENTS || !parts.every((p) => SEGMENT.test(p))) {
    throw new InvalidBlobKeyError(String(key));
  }
  return key;
}

/** Same rules for a list prefix, which may also be empty or end with "/". */
export function checkBlobPrefix(prefix: string): string {
  if (prefix === '') return prefix;
  checkBlobKey(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
  return prefix;
}
