// A per-actor serial queue: tasks run one at a time in the order they were enqueued, whatever
// their outcome. `pending` counts queued and running tasks (the runtime evicts only idle actors).

export class Mailbox {
  private tail: Promise<unknown> = Promise.resolve();
  pending = 0;

  enqueue<T>(task: () => Promise<T>): Promise<T> {
    this.pending += 1;
    const run = async (): Promise<T> => {
      try {
        return await task();
      } finally {
        this.pending -= 1;
      }
    };
    const result = this.tail.then(run, run);
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** Resolves once every task enqueued so far has settled. */
  drained(): Promise<void> {
    return this.tail.then(() => undefined);
  }
}
