// What Node's HTTP parser refuses never reaches a route: a malformed request line, NUL or obs-fold
// in a header, Transfer-Encoding with Content-Length, a bad chunk, headers over the size limit, and
// requests whose headers or body did not arrive in time. The server's 'clientError' comes here
// (fastify's `clientErrorHandler`): the refusal is the error envelope with a fresh request id and
// `Connection: close`, and the socket is closed after it, so a keep-alive client does not send
// its next request down a connection the server is dropping.
import { maxHeaderSize } from 'node:http';
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
type HttpSocket = Socket & { _httpMessage?: { headersSent?: boolean } | null };

export function clientErrorHandler(deps: ClientErrorDeps): (error: Error, socket: Socket) => void {
  return (error, socket) => {
    const err = error as ParserError;
    if (socket.destroyed || wasAnswered(socket)) return; // further parse errors on a socket being closed
    // The peer went away, or part of a response is on the wire already (a parse error in a pipelined
    // request while a stream answers the one before): nothing sensible can be written.
    if (err.code === 'ECONNRESET' || (socket as HttpSocket)._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const refusal = toRefusal(err, deps);
    const requestId = deps.newRequestId();
    const reason = typeof err.code === 'string' && /^[A-Z0-9_]{1,48}$/.test(err.code) ? err.code : 'other';
    deps.metrics.clientErrors.inc({ status: String(refusal.status), reason });
    deps.logger.info({ request_id: requestId, status: refusal.status, reason, remote_address: socket.remoteAddress }, 'request refused by the HTTP parser');
    answerAndClose(socket, refusal, requestId, Buffer.isBuffer(err.rawPacket) && err.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ');
  };
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
