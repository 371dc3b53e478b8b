// What Node's HTTP parser refuses never reaches a route: a malformed request line, NUL or obs-fold
// in a header, Transfer-Encoding with Content-Length, a bad chunk, headers over the size limit, and
// requests whose headers or body did not arrive in time. The server's 'clientError' comes here
// (fastify's `clientErrorHandler`): the refusal is the error envelope with a fresh request id and
// `Connection: close`, and the socket is closed after it, so a keep-alive client does not send
// its next request down a connection the server is dropping.
//
// A refused request pipelined behind earlier ones on the same connection (a valid request and a
// malformed one in one write) waits for them: Node raises the error while the earlier request is
// still being handled, and answering at once closed the connection under it, so its client never
// saw the answer to a request whose effect had happened (a key created, a speech call charged as
// `client_closed`). The refusal is written once the answers in flight have been, then the close.
import { maxHeaderSize, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { ApiError } from './errors.ts';
import type { HttpMetrics } from './metrics.ts';
import { answerAndClose, wasAnswered } from './raw-reply.ts';

export interface ClientErrorDeps {
  newRequestId(): string;
  metrics: Pick<HttpMetrics, 'clientErrors'>;
  logger: Logger;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

type ParserError = Error & { code?: string; reason?: string; rawPacket?: Buffer };

/** The response Node has attached to the socket, if any (the public API has no accessor). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null };

/** Sockets whose refusal waits for the answers in flight on them (further parse errors on them are ignored). */
const waiting = new WeakSet<Socket>();

export function clientErrorHandler(deps: ClientErrorDeps): (error: Error, socket: Socket) => void {
  return (error, socket) => {
    const err = error as ParserError;
    // Further parse errors on a socket being closed, or whose refusal is waiting.
    if (socket.destroyed || wasAnswered(socket) || waiting.has(socket)) return;
    if (err.code === 'ECONNRESET') {
      socket.destroy(); // the peer went away
      return;
    }
    const refusal = toRefusal(err, deps);
    const requestId = deps.newRequestId();
    const reason = typeof err.code === 'string' && /^[A-Z0-9_]{1,48}$/.test(err.code) ? err.code : 'other';
    deps.metrics.clientErrors.inc({ status: String(refusal.status), reason });
    deps.logger.info({ request_id: requestId, status: refusal.status, reason, remote_address: socket.remoteAddress }, 'request refused by the HTTP parser');
    const head = Buffer.isBuffer(err.rawPacket) && err.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
    afterAnswersInFlight(socket as HttpSocket, () => answerAndClose(socket, refusal, requestId, head));
  };
}

/**
 * Runs `then` once no answer to a request received whole is in flight on the socket: at once, or
 * when the one being written has been handed to the socket and the ones queued behind it (Node
 * attaches each as the one before finishes) have too. A request not received whole is the refused
 * one (the parser stops at the error); when part of an answer to it is on the wire already, nothing
 * sensible can be written and the socket is destroyed. A socket closed meanwhile, or ending after
 * an answer that said `Connection: close`, gets no refusal.
 */
function afterAnswersInFlight(socket: HttpSocket, then: () => void): void {
  const res = socket._httpMessage;
  if (!res || (!res.req.complete && !res.headersSent)) return then();
  if (!res.req.complete) {
    socket.destroy();
    return;
  }
  waiting.add(socket);
  const next = (): void => {
    res.off('finish', next).off('close', next);
    if (socket.destroyed || !socket.writable) return;
    afterAnswersInFlight(socket, then);
  };
  res.on('finish', next).on('close', next);
}

function toRefusal(err: ParserError, deps: ClientErrorDeps): ApiError {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(
        'request_timeout',
        `The request did not arrive in time (headers within ${deps.headersTimeoutMs} ms, the whole request within ${deps.requestTimeoutMs} ms).`,
      );
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('headers_too_large', `The request's headers are larger than ${maxHeaderSize} bytes.`);
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new ApiError('body_too_large', "The request's chunk extensions are too large.");
    default: {
      // llhttp's reasons are fixed phrases ("Invalid header value char"); nothing of the request is echoed.
      const why = typeof err.reason === 'string' && err.reason.length <= 100 ? err.reason : (err.code ?? 'unreadable');
      return new ApiError('invalid_request', `The request is not valid HTTP/1.1: ${why}.`);
    }
  }
}
