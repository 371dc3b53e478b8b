// An error answer written straight onto a socket, for the refusals that happen where there is no
// request or response object: Node's parser gave up on the bytes, a request timed out, or a
// connection is over its cap. The answer is the error envelope with its request id in
// x-request-id and `Connection: close`; then the socket is closed.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { toEnvelope, type ApiError } from './errors.ts';

/**
 * How long a refused socket may stay open after the answer: its input is read and dropped
 * meanwhile, so the peer is not reset (closing with unread input sends an RST, which can make the
 * peer drop the answer it has not read yet), and a peer that never closes its side is cut.
 */
const LINGER_MS = 2000;

const answered = new WeakSet<Socket>();

/** Whether the socket was already given its last answer (further errors on it are ignored). */
export function wasAnswered(socket: Socket): boolean {
  return answered.has(socket);
}

/** Writes `err` in the envelope (only its head when `head`) and closes the socket after it. */
export function answerAndClose(socket: Socket, err: ApiError, requestId: string, head: boolean): void {
  answered.add(socket);
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const json = JSON.stringify(toEnvelope(err, requestId));
  const lines = [
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(json)}`, // a HEAD answer says what the body would be, as fastify's do
    'connection: close',
    `x-request-id: ${requestId}`,
    ...Object.entries(err.options.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.on('error', () => {}); // a peer gone meanwhile is not our failure
  const linger = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once('close', () => clearTimeout(linger));
  socket.end(`${lines.join('\r\n')}\r\n\r\n${head ? '' : json}`);
  socket.resume();
}
