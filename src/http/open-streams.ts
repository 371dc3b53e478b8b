// Responses streamed outside fastify's reply (hijacked: SSE, raw audio), which shutdown must end.
// fastify's close waits for every connection to end; a stream whose client stopped reading never
// does (its last write waits for a drain that does not come), nor does a long stream still
// talking. So each streamed response runs under `track`, and shutdown gives them `graceMs` to
// finish, then destroys the connections of those left (their routes see the client leave: the
// upstream is let go and the audio or tokens sent are billed, once) and waits for their routes
// to finish, billing included, before the rest of the shutdown closes billing and the store.
import type { ServerResponse } from 'node:http';

export class OpenStreams {
  readonly #open = new Map<ServerResponse, Promise<void>>();

  /** Runs a streamed response's body; shutdown waits for it (and, past its grace, ends it). */
  async track(res: ServerResponse, body: () => Promise<void>): Promise<void> {
    const run = body();
    this.#open.set(res, run.then(() => undefined, () => undefined));
    try {
      await run;
    } finally {
      this.#open.delete(res);
    }
  }

  get size(): number {
    return this.#open.size;
  }

  /** Waits up to `graceMs` for the open streams to end, then destroys the rest and waits for their routes. */
  async close(graceMs: number): Promise<void> {
    if (this.#open.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([Promise.all(this.#open.values()), grace]);
    clearTimeout(timer);
    for (const res of this.#open.keys()) res.destroy();
    await Promise.all(this.#open.values());
  }
}
