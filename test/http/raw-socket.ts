// Raw HTTP/1.1 over a TCP socket on loopback, for what fetch cannot send (malformed requests,
// stalled headers or bodies) and to see exactly what the server wrote and when it closed.
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Everything the server wrote. */
  raw: string;
  /** Whether the server closed the connection (we saw its FIN or a reset). */
  closed: boolean;
  /** Milliseconds from the first byte we sent until the server closed (or the wait ended). */
  ms: number;
}

/** Connects to a URL's host and port; resolves once connected. */
export function openSocket(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect({ host: hostname, port: Number(port) }, () => {
      s.off('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/**
 * Sends `data` (a string, or pieces written in turn) on `socket` (or a new connection) and
 * collects what comes back until the server closes the connection or `waitMs` passes.
 * With `untilResponse` it stops as soon as one complete response is in (keep-alive).
 */
export async function exchange(target: string | Socket, data: string | Buffer, opts: { waitMs?: number; untilResponse?: boolean } = {}): Promise<RawResponse> {
  const socket = typeof target === 'string' ? await openSocket(target) : target;
  const chunks: Buffer[] = [];
  const started = performance.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.off('data', onData).off('end', onEnd).off('close', onClose).off('error', onError);
      resolve({ ...parse(Buffer.concat(chunks).toString('latin1')), closed, ms: performance.now() - started });
    };
    const onData = (b: Buffer) => {
      chunks.push(b);
      if (opts.untilResponse && complete(Buffer.concat(chunks).toString('latin1'))) finish(false);
    };
    const onEnd = () => finish(true);
    const onClose = () => finish(true);
    const onError = () => finish(true);
    const timer = setTimeout(() => finish(false), opts.waitMs ?? 5000);
    socket.on('data', onData).on('end', onEnd).on('close', onClose).on('error', onError);
    socket.write(data);
  });
}

function complete(text: string): boolean {
  const at = text.indexOf('\r\n\r\n');
  if (at < 0) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, at));
  return length ? text.length - at - 4 >= Number(length[1]) : true;
}

function parse(raw: string): Pick<RawResponse, 'status' | 'headers' | 'body' | 'raw'> {
  const at = raw.indexOf('\r\n\r\n');
  const head = at < 0 ? raw : raw.slice(0, at);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  return { status, headers, body: at < 0 ? '' : raw.slice(at + 4), raw };
}

/** Every response in what a server wrote on one connection, in order (bodies sized by Content-Length, or chunked). */
export function responsesOf(raw: string): Pick<RawResponse, 'status' | 'headers' | 'body'>[] {
  const out: Pick<RawResponse, 'status' | 'headers' | 'body'>[] = [];
  let rest = raw;
  while (rest.length > 0) {
    const at = rest.indexOf('\r\n\r\n');
    if (at < 0) throw new Error(`an incomplete response head: ${rest.slice(0, 200)}`);
    const { status, headers } = parse(rest.slice(0, at + 4));
    rest = rest.slice(at + 4);
    let body = '';
    if (headers['transfer-encoding'] === 'chunked') {
      for (;;) {
        const eol = rest.indexOf('\r\n');
        const size = parseInt(rest.slice(0, eol), 16);
        if (eol < 0 || Number.isNaN(size)) throw new Error(`a bad chunk: ${rest.slice(0, 100)}`);
        body += rest.slice(eol + 2, eol + 2 + size);
        rest = rest.slice(eol + 2 + size + 2);
        if (size === 0) break;
      }
    } else {
      const length = Number(headers['content-length'] ?? 0);
      body = rest.slice(0, length);
      rest = rest.slice(length);
    }
    out.push({ status, headers, body });
  }
  return out;
}
