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
    await Promise.race([Promise.all(this.#open.values()), limit]);
    clearTimeout(timer);
  }
}
