// Server-Sent Events from an upstream (chat streams): read from the answer's body with bounds on
// lines, events, bytes, silence and duration, each event's data parsed as JSON; after the stream,
// its socket goes back to the keep-alive pool when what is left is little, else it is closed.
import type { Readable } from 'node:stream';
import { Cancel, type CancelSignal } from './cancel.ts';
import { discard } from './body.ts';
import { UpstreamError } from './types.ts';
import { parseJson, protocolError } from './validate.ts';

/** One SSE event with parsed JSON data, or the OpenAI `[DONE]` terminator. */
export type SseMessage = { type: 'event'; event: string; data: unknown } | { type: 'done' };

export interface SseOptions {
  routeId: string;
  maxLineBytes: number;
  maxBytes: number;
  idleTimeoutMs: number;
  maxDurationMs: number;
  /** The call's signal: the time spent waiting for the stream's bytes is added to it (cancel.ts, `waitedOn`). */
  waits?: CancelSignal;
}

const LF = 10;
const CR = 13;

/**
 * Reads Server-Sent Events from a Node stream: `data:` lines (several join with "\n"), `event:`
 * names, comments, LF/CRLF/CR line ends split anywhere across chunks, a leading BOM. Each event's
 * data is parsed as JSON; `[DONE]` yields `{type: 'done'}` and ends the stream. Throws
 * UpstreamError 'protocol' for a line or event over `maxLineBytes`, a stream over `maxBytes` or
 * data that is not JSON, and 'timeout' after `idleTimeoutMs` without bytes while the reader waits
 * (a slow consumer is not the upstream's fault) or after `maxDurationMs` in all. An event cut off
 * by the end of the stream is dropped, as the SSE specification says.
 */
export async function* readSse(body: Readable, opts: SseOptions): AsyncGenerator<SseMessage> {
  const { routeId, maxLineBytes } = opts;
  const fail = (err: UpstreamError): void => void body.destroy(err);
  let waiting = false;
  const idle = setTimeout(() => {
    if (waiting) fail(new UpstreamError('timeout', `route ${routeId}: stream idle for ${opts.idleTimeoutMs} ms`, true));
  }, opts.idleTimeoutMs);
  const deadline = setTimeout(
    () => fail(new UpstreamError('timeout', `route ${routeId}: stream exceeded ${opts.maxDurationMs} ms`, true)),
    opts.maxDurationMs,
  ).unref();
  const chunks = body.iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer | string>;
  let clean = true;
  let total = 0;
  const account = opts.waits instanceof Cancel ? opts.waits : null;

  let pending: Buffer[] = [];
  let pendingLen = 0;
  let skipLF = false;
  let firstLine = true;
  let event = '';
  let data: string[] = [];
  let dataLen = 0;

  // Returns the message an empty line dispatches, if any.
  const onLine = (raw: string): SseMessage | null => {
    let line = raw;
    if (firstLine) {
      firstLine = false;
      if (line.charCodeAt(0) === 0xfeff) line = line.slice(1);
    }
    if (line === '') {
      if (data.length === 0) {
        event = '';
        return null;
      }
      const text = data.join('\n');
      const name = event || 'message';
      event = '';
      data = [];
      dataLen = 0;
      if (text === '[DONE]') return { type: 'done' };
      try {
        return { type: 'event', event: name, data: parseJson(text) };
      } catch {
        throw protocolError(routeId, 'an event is not JSON or nests too deep');
      }
    }
    if (line.charCodeAt(0) === 0x3a) return null; // ':' comment
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === 'data') {
      dataLen += value.length + 1;
      if (dataLen > maxLineBytes) throw protocolError(routeId, `an event exceeds ${maxLineBytes} bytes`);
      data.push(value);
    } else if (field === 'event') {
      event = value;
    }
    return null;
  };

  try {
    for (;;) {
      waiting = true;
      idle.refresh();
      const asked = account ? performance.now() : 0;
      const next = await chunks.next();
      if (account) account.upstreamMs += performance.now() - asked;
      waiting = false;
      if (next.done) return;
      const chunk = typeof next.value === 'string' ? Buffer.from(next.value) : next.value;
      total += chunk.length;
      if (total > opts.maxBytes) throw protocolError(routeId, `the stream exceeds ${opts.maxBytes} bytes`);

      let pos = 0;
      if (skipLF && chunk.length > 0) {
        if (chunk[0] === LF) pos = 1;
        skipLF = false;
      }
      let nextCR = chunk.indexOf(CR, pos);
      while (pos < chunk.length) {
        if (nextCR >= 0 && nextCR < pos) nextCR = chunk.indexOf(CR, pos);
        const nextLF = chunk.indexOf(LF, pos);
        const end = nextLF < 0 ? nextCR : nextCR < 0 ? nextLF : Math.min(nextLF, nextCR);
        if (end < 0) {
          pendingLen += chunk.length - pos;
          if (pendingLen > maxLineBytes) throw protocolError(routeId, `a line exceeds ${maxLineBytes} bytes`);
          pending.push(chunk.subarray(pos));
          break;
        }
        const piece = chunk.subarray(pos, end);
        if (pendingLen + piece.length > maxLineBytes) throw protocolError(routeId, `a line exceeds ${maxLineBytes} bytes`);
        const line = pendingLen === 0 ? piece.toString('utf8') : Buffer.concat([...pending, piece]).toString('utf8');
        pending = [];
        pendingLen = 0;
        pos = end + 1;
        if (chunk[end] === CR) {
          if (pos < chunk.length) {
            if (chunk[pos] === LF) pos += 1;
          } else {
            skipLF = true;
          }
        }
        const message = onLine(line);
        if (message) {
          yield message;
          if (message.type === 'done') return;
        }
      }
    }
  } catch (err) {
    clean = false;
    throw err;
  } finally {
    clearTimeout(idle);
    clearTimeout(deadline);
    release(body, clean, total);
  }
}

/** How long a stream's remainder may take to arrive after [DONE] before its connection is closed. */
const RELEASE_WAIT_MS = 1000;

/**
 * After a clean end (or a consumer that stopped at an event boundary), reads the little that is
 * left so the keep-alive socket goes back to the pool; after a failure, closes it.
 */
function release(body: Readable, clean: boolean, consumed: number): void {
  if (body.readableEnded || body.destroyed) return;
  const dump = (body as Readable & { dump?: (o: { limit: number; signal: CancelSignal }) => Promise<void> }).dump;
  if (!clean || typeof dump !== 'function') {
    discard(body);
    return;
  }
  // A Cancel and a plain timer, not AbortSignal.timeout: that builds an EventTarget and a tracked
  // timer per stream (~20 µs of a streamed call's CPU in profiles). undici takes any signal-like object.
  const giveUp = new Cancel();
  const timer = setTimeout(() => giveUp.abort(), RELEASE_WAIT_MS);
  dump.call(body, { limit: consumed + (64 << 10), signal: giveUp }).then(
    () => clearTimeout(timer),
    () => {
      clearTimeout(timer);
      discard(body);
    },
  );
}
