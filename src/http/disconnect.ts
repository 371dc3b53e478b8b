// The HTTP edge's side of cancellation: a response whose client went away cancels the upstream call
// made for it (src/providers/cancel.ts: the calls below the routes take only a CancelSignal).
import type { ServerResponse } from 'node:http';
import { Cancel } from '../providers/cancel.ts';

/**
 * A Cancel that fires when the client goes away before `res` (an HTTP response) finished.
 * The request's 'close' fires early; a response 'close' without a finished response is the real
 * disconnect (SECURITY.md, "Hardening: stack defaults we override").
 */
export function cancelOnDisconnect(res: ServerResponse): Cancel {
  const cancel = new Cancel();
  res.on('close', () => {
    if (!res.writableFinished) cancel.abort();
  });
  return cancel;
}
