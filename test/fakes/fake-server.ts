// What the fake upstreams share: a node:http server on 127.0.0.1 (port 0) that records every request
// (headers and parsed body included), counts requests in flight, and behaves per request as the
// test programs it (fail with a status, hang, delay, cut a stream short...). The replies are
// deterministic: the text is derived from the last user message, token counts from word counts.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** How the fake answers one request. Unset fields mean a normal, prompt answer. */
export interface FakeBehaviour {
  /** Answer with this status and the provider's error body. */
  status?: number;
  /** The error body's message (with `status`). */
  message?: string;
  /** Wait before answering. */
  delayMs?: number;
  /** Wait until this settles before answering: the test decides when the calls it holds in flight end. */
  until?: Promise<unknown>;
  /** Never answer; the connection stays open until the client closes it. */
  hang?: boolean;
  /** Destroy the connection without answering. */
  reset?: boolean;
  /** Replace the reply text. */
  reply?: string;
  /** Replace the usage object (to send absurd values). */
  usage?: unknown;
  /** Non-stream: add this many bytes of padding to the answer. */
  padBytes?: number;
  /** Non-stream: send this text as the 200 body instead of the answer. */
  rawBody?: string;
  /** Stream: pause between events. */
  chunkDelayMs?: number;
  /** Stream: destroy the connection after this many events. */
  closeAfterChunks?: number;
  /** Stream: end the response cleanly (no terminator) after this many events. */
  endAfterChunks?: number;
  /** Stream: stop sending after this many events, keeping the connection open. */
  hangAfterChunks?: number;
  /** Stream: send a frame that is not JSON after this many events. */
  malformedAfterChunks?: number;
  /** Stream: send the provider's in-stream error after this many events. */
  errorAfterChunks?: number;
  /** Stream: send one data line this long before the first event. */
  longLineBytes?: number;
  /** Stream: wait this long after the last event before ending the response. */
  lingerMs?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** The query string, without its `?`. */
  query: string;
  headers: IncomingHttpHeaders;
  /** The body parsed as JSON, else as UTF-8 text. */
  body: any;
  /** The body's bytes as they came (multipart forms, audio). */
  raw: Buffer;
  remotePort: number;
  /** Date.now() when the request arrived. */
  at: number;
  /** True when the client closed the connection before the answer was complete. */
  closedEarly: boolean;
  /** Resolves when the exchange is over: answered, or the connection closed. */
  ended: Promise<void>;
}

export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  rec: RecordedRequest;
  behaviour: FakeBehaviour;
}

export type Handler = (x: Exchange) => Promise<void>;

export class FakeServer {
  readonly requests: RecordedRequest[] = [];
  /** Requests being answered right now, and the most seen at once. */
  active = 0;
  maxActive = 0;
  /** Used when the queue is empty. */
  defaultBehaviour: FakeBehaviour = {};
  readonly #queue: FakeBehaviour[] = [];

  private constructor(
    readonly server: Server,
    readonly url: string,
  ) {}

  static async start(handler: Handler): Promise<FakeServer> {
    let self: FakeServer | undefined;
    const server = createServer((req, res) => void self!.#handle(req, res, handler));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    self = new FakeServer(server, `http://127.0.0.1:${port}`);
    return self;
  }

  /** Queues behaviours for the next requests, one each, in order. */
  next(...behaviours: FakeBehaviour[]): this {
    this.#queue.push(...behaviours);
    return this;
  }

  /** The requests to `path`. */
  calls(path: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse, handler: Handler): Promise<void> {
    const behaviour = this.#queue.shift() ?? this.defaultBehaviour;
    let finish!: () => void;
    const rec: RecordedRequest = {
      method: req.method ?? '',
      path: (req.url ?? '').split('?')[0] ?? '',
      query: (req.url ?? '').split('?').slice(1).join('?'),
      headers: req.headers,
      body: undefined,
      raw: Buffer.alloc(0),
      remotePort: req.socket.remotePort ?? 0,
      at: Date.now(),
      closedEarly: false,
      ended: new Promise<void>((resolve) => (finish = resolve)),
    };
    this.requests.push(rec);
    this.active += 1;
    this.maxActive = Math.max(this.maxActive, this.active);
    res.on('close', () => {
      if (!res.writableFinished) rec.closedEarly = true;
      this.active -= 1;
      finish();
    });
    try {
      rec.raw = await readBody(req);
      const raw = rec.raw.toString('utf8');
      try {
        rec.body = JSON.parse(raw);
      } catch {
        rec.body = raw;
      }
      if (behaviour.reset) {
        req.socket.destroy();
        return;
      }
      if (behaviour.delayMs) await sleep(behaviour.delayMs);
      if (behaviour.until) await behaviour.until;
      if (behaviour.hang) return;
      await handler({ req, res, rec, behaviour });
    } catch {
      if (!res.headersSent) sendJson(res, 500, { error: { message: 'fake upstream failed' } });
      else res.destroy();
    }
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A JSON answer with the behaviour's padding or raw body applied. */
export function sendAnswer(x: Exchange, body: Record<string, unknown>): void {
  const { rawBody, padBytes } = x.behaviour;
  if (rawBody !== undefined) {
    x.res.writeHead(200, { 'content-type': 'application/json' });
    x.res.end(rawBody);
    return;
  }
  sendJson(x.res, 200, padBytes ? { ...body, pad: 'x'.repeat(padBytes) } : body);
}

/**
 * Streams SSE frames (each a complete "…\n\n" string) with the behaviour's faults: `frames` are
 * counted as events; `errorFrame` is what `errorAfterChunks` sends.
 */
export async function sendStream(x: Exchange, frames: string[], errorFrame: string): Promise<void> {
  const { res, behaviour: b } = x;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
  if (b.longLineBytes) res.write(`data: "${'x'.repeat(b.longLineBytes)}"\n\n`);
  for (let i = 0; i <= frames.length; i++) {
    if (b.closeAfterChunks === i) {
      // Let what was written reach the client before the connection dies.
      await sleep(20);
      res.destroy();
      return;
    }
    if (b.endAfterChunks === i) {
      res.end();
      return;
    }
    if (b.hangAfterChunks === i) return;
    if (b.malformedAfterChunks === i) {
      res.end('data: {"choices": [{"delta": \n\n');
      return;
    }
    if (b.errorAfterChunks === i) {
      res.end(errorFrame);
      return;
    }
    if (i === frames.length) break;
    if (i > 0 && b.chunkDelayMs) await sleep(b.chunkDelayMs);
    if (res.destroyed) return;
    res.write(frames[i]);
  }
  if (b.lingerMs) await sleep(b.lingerMs);
  res.end();
}

/** The words of a text, as the fakes count tokens. */
export function words(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}

export interface Simulated {
  text: string;
  /** The text in stream pieces (" word" each); joined they are `text`. */
  pieces: string[];
  finish: 'stop' | 'length';
  /** The text was cut at a stop sequence. */
  stopSequence: boolean;
  promptTokens: number;
  completionTokens: number;
}

/**
 * The deterministic reply: "You said: <last user message>", cut at the first stop sequence
 * (finish 'stop') or at `maxTokens` words (finish 'length'). A token is a word.
 */
export function simulate(messages: { role: string; content: string }[], reply: string | undefined, maxTokens?: number, stop?: string[]): Simulated {
  const lastUser = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  let text = reply ?? `You said: ${lastUser}`;
  let stopSequence = false;
  for (const s of stop ?? []) {
    const at = s ? text.indexOf(s) : -1;
    if (at >= 0) {
      text = text.slice(0, at);
      stopSequence = true;
    }
  }
  let pieces: string[] = text.match(/\s*\S+/g) ?? [];
  let finish: Simulated['finish'] = 'stop';
  if (maxTokens !== undefined && pieces.length > maxTokens) {
    pieces = pieces.slice(0, maxTokens);
    finish = 'length';
    stopSequence = false;
  }
  text = pieces.join('');
  const promptTokens = messages.reduce((n, m) => n + words(m.content).length, 0);
  return { text, pieces, finish, stopSequence, promptTokens, completionTokens: pieces.length };
}

/** A callback a fake provider POSTed to the gateway, and the status it got (0: no answer). */
export interface CallbackSent {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  status: number | null;
}

/** POSTs `body` as JSON to `url` as a provider's callback, recording it in `log`. */
export async function deliverCallback(log: CallbackSent[], url: string, headers: Record<string, string>, body: unknown): Promise<void> {
  const sent: CallbackSent = { url, headers: { 'content-type': 'application/json', ...headers }, body, status: null };
  log.push(sent);
  try {
    const res = await fetch(url, { method: 'POST', headers: sent.headers, body: JSON.stringify(body) });
    sent.status = res.status;
    await res.arrayBuffer();
  } catch {
    sent.status = 0;
  }
}
