// How an owner learns that a message for one of its actors was written by another instance.
// In process (the embedded store, or several runtimes in one test process): an EventEmitter.
// On MongoDB: a change stream on the inbox collection (src/actors/wakeups-mongo.ts). Either way the
// runtime also polls (RuntimeOptions.inboxPollMs), so a lost wake-up only delays a message.
import { EventEmitter } from 'node:events';

export interface Wakeups {
  /** Tells the owner of actor `key` that a message waits. */
  notify(key: string): void;
  /** Calls `listener` with the key of every actor that got a message; returns the unsubscribe. */
  subscribe(listener: (key: string) => void): () => void;
  close?(): Promise<void>;
}

export class LocalWakeups implements Wakeups {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  notify(key: string): void {
    this.emitter.emit('message', key);
  }

  subscribe(listener: (key: string) => void): () => void {
    this.emitter.on('message', listener);
    return () => this.emitter.off('message', listener);
  }
}
