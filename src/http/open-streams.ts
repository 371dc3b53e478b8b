// Responses streamed outside fastify's reply (hijacked: SSE, raw audio): their writes, and their end
// at shutdown.
//
// Writes wait for the socket to drain when it is full, or for the client to leave; a write that
// waits `stallMs` (its client stopped reading, or takes in less than what is queued in that time)
// cuts it, as the realtime socket cuts a client that leaves its frames unread. Its connection is destroyed,
// so its route sees the client leave: the upstream or engine is let go at once (its concurrency
// slot freed) and what was sent is billed, once. Without it, a few clients that read a status line
// and nothing more held every slot of a route for as long as they kept their sockets open.
//
// fastify's close waits for every connection to end; a stream whose client stopped reading never
// does (before the stall timeout cuts it), nor does a long stream still talking. So each streamed
// response runs under `track`, and shutdown gives them `graceMs` to finish, then destroys the
// connections of those left (their routes see the client leave, as above) and waits for their
// routes to finish, billing included, before the rest of the shutdown closes billing and the store.
import type { ServerResponse } from 'node:http';

/** What a stream logs with (its request's logger). */
export interface StreamLog {
  warn(obj: object, msg: string): void;
}

export class OpenStreams {
  readonly #open = new Map<ServerResponse, { done: Promise<void>; log: StreamLog }>();

  constructor(private readonly stallMs: number) {}

  /** Runs a streamed response's body; shutdown waits for it (and, past its grace, ends it). */
  async track(res: ServerResponse, log: StreamLog, body: () => Promise<void>): Promise<void> {
    const run = body();
    this.#open.set(res, {
      done: run.then(
        () => undefined,
        () => undefined,
      ),
      log,
    });
    try {
      await run;
    } finally {
      this.#open.delete(res);
    }
  }

  /**
   * Writes to a streamed response; when the socket is full, resolves once it drained or the
   * connection closed, and closes it when it stays full for `stallMs`.
   */
  async write(res: ServerResponse, data: string | Buffer): Promise<void> {
    if (res.write(data) || res.destroyed) return;
    await new Promise<void>((resolve) => {
      const stalled = setTimeout(() => {
        this.#open.get(res)?.log.warn({ stall_ms: this.stallMs, unsent_bytes: res.writableLength }, 'streamed response: client not reading, cut');
        res.destroy();
      }, this.stallMs);
      const done = (): void => {
        clearTimeout(stalled);
        res.off('drain', done).off('close', done);
        resolve();
      };
      res.on('drain', done).on('close', done);
    });
  }

  get size(): number {
    return this.#open.size;
  }

  /**
   * Waits up to `graceMs` for the open streams to end, then destroys the rest's connections and
   * waits for their routes (billing) up to `graceMs` again. Answers how many routes had not
   * finished by then (0 normally: a route sees its client leave at once).
   */
  async close(graceMs: number): Promise<number> {
    if (this.#open.size === 0) return 0;
    await this.#settled(graceMs);
    for (const res of this.#open.keys()) res.destroy();
    await this.#settled(graceMs);
    return this.#open.size;
  }

  async #settled(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
    await Promise.race([Promise.all([...this.#open.values()].map((s) => s.done)), limit]);
    clearTimeout(timer);
  }
}
