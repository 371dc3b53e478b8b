// Wake-ups through the store's change stream (MongoDB with a replica set): an inserted inbox
// message wakes its actor's owner, an updated one (a reply written) wakes its sender, on every
// instance. `notify` is a no-op: the stream delivers the writes themselves. Where the store has
// no change streams, or the stream fails, the runtime's poll still delivers (inboxPollMs).
import type { Logger } from 'pino';
import type { Store } from '../store/port.ts';
import { INBOX } from './record.ts';
import type { Wakeups } from './wakeups.ts';

export class StoreWakeups implements Wakeups {
  private readonly listeners = new Set<(key: string) => void>();
  private stop: (() => Promise<void>) | null = null;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  notify(): void {}

  subscribe(listener: (key: string) => void): () => void {
    this.listeners.add(listener);
    if (!this.stop && this.store.watch) {
      this.stop = this.store.watch(
        INBOX,
        (change) => {
          // Inserts wake the actor's owner (by actor key); updates wake the sender (by message id).
          const key = change.op === 'insert' ? (change.doc?.key as string | undefined) : String(change.id);
          if (key === undefined) return;
          for (const l of this.listeners) l(key);
        },
        (err) => {
          this.log.warn({ err }, 'inbox change stream unavailable: messages are delivered by polling');
          this.stop = null;
        },
      );
    }
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    const stop = this.stop;
    this.stop = null;
    await stop?.();
  }
}
