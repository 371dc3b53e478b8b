// The HTTP edge's side of cancellation: a response whose client went away cancels the upstream call
// made for it (src/providers/cancel.ts: the calls below the routes take only a CancelSignal).
import type { FastifyReply } from 'fastify';
import { Cancel } from '../providers/cancel.ts';

/**
 * A Cancel that fires when the client goes away before the reply finished; kept as the request's
 * `cancel`, so the time its upstream calls waited is subtracted from the gateway's own (overhead.ts).
 * The request's 'close' fires early; a response 'close' without a finished response is the real
 * disconnect (SECURITY.md, "Hardening: stack defaults we override").
 */
export function cancelOnDisconnect(reply: FastifyReply): Cancel {
  const cancel = new Cancel();
  const res = reply.raw;
  res.on('close', () => {
    if (!res.writableFinished) cancel.abort();
  });
  reply.request.cancel = cancel;
  return cancel;
}
