// A real HTTP receiver on loopback for webhook tests: records every request's raw body and headers,
// and answers as the test says (a status, a delay, never, a redirect).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  raw: Buffer;
  headers: IncomingMessage['headers'];
  json: Record<string, unknown>;
  at: number;
}

export type Behaviour = (req: IncomingMessage, res: ServerResponse, n: number) => void;

export const answer =
  (status: number): Behaviour =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end('receiver body that must never be shown');
  };

/** Never answers (the connection stays open until the receiver closes). */
export const hang: Behaviour = () => {};

export interface Receiver {
  url: string;
  received: Received[];
  behave: Behaviour;
  /** Sets how the next requests are answered. */
  set(b: Behaviour): void;
  close(): Promise<void>;
}

export async function startReceiver(behave: Behaviour = answer(204), host = '127.0.0.1'): Promise<Receiver> {
  const received: Received[] = [];
  const state = { behave };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        /* not JSON */
      }
      received.push({ raw, headers: req.headers, json, at: Date.now() });
      state.behave(req, res, received.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/hook`,
    received,
    get behave() {
      return state.behave;
    },
    set(b: Behaviour) {
      state.behave = b;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The receiver's side of the spec: HMAC-SHA256 of the raw body, compared in constant time. */
export function verify(secret: string, raw: Buffer, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(raw).digest('hex'), 'utf8');
  const given = Buffer.from(header.slice('sha256='.length), 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
