// Server-sent events onto a hijacked reply, shared by the streaming routes: headers once, each
// frame written as it comes (waiting for the socket to drain, or the client to leave, when it is
// full; a client that stops reading is cut after the stall timeout, see open-streams.ts), a
// mid-stream failure ended with one error frame, then the end of the response.
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';
import type { CancelSignal } from '../providers/cancel.ts';
import type { OpenStreams } from './open-streams.ts';
import { stampOverhead } from './overhead.ts';

/** Writes one SSE frame, as `streams.write` does. */
async function send(streams: OpenStreams, res: ServerResponse, frame: string): Promise<void> {
  // Events that are ready together (an upstream read often holds several) leave in one write: the
  // response is corked until the current tick's work is done, which delays nothing that waits.
  if (res.writableCorked === 0) {
    res.cork();
    process.nextTick(() => res.uncork());
  }
  await streams.write(res, frame);
}

export interface SseFraming<T> {
  frame(item: T): string;
  /** The last frame of a stream that completed (chat's `[DONE]`), if any. */
  done?: string;
  /** The frame that ends a stream the upstream failed mid-way. */
  error(err: ApiError): string;
}

export async function relaySse<T>(
  req: FastifyRequest,
  reply: FastifyReply,
  streams: OpenStreams,
  cancel: CancelSignal,
  items: AsyncIterable<T>,
  framing: SseFraming<T>,
): Promise<void> {
  reply.hijack();
  stampOverhead(reply); // the time to the headers: the first chunk in hand, less the wait for it
  const res = reply.raw;
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>), // x-request-id, x-gateway-overhead-ms, a limited key's x-ratelimit-*
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  await streams.track(res, req.log, async () => {
    try {
      for await (const item of items) {
        if (cancel.aborted) break;
        await send(streams, res, framing.frame(item));
      }
      if (!cancel.aborted && framing.done !== undefined) await send(streams, res, framing.done);
    } catch (err) {
      const api = err instanceof ApiError ? err : new ApiError('model_unavailable', 'The upstream failed during the stream.');
      if (!(err instanceof ApiError)) req.log.warn({ err }, 'stream ended by upstream failure');
      if (!cancel.aborted) await send(streams, res, framing.error(api));
    }
    res.end();
  });
}
