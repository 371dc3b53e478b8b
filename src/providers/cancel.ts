// Cancellation of an upstream call. Everything below the HTTP routes asks only for `CancelSignal`:
// an AbortSignal is one, and so is `Cancel`, the light one the hot path makes. Node's
// AbortController builds an EventTarget per request (about 5 µs with its listeners, twice per call
// in CPU profiles of the chat path); undici accepts any object with addEventListener.
//
// A Cancel is also the one per-request object that reaches the upstream clients, so it carries the
// time the request spent waiting on upstreams (`upstreamMs`, added by http.ts, upload.ts and sse.ts):
// the HTTP edge reports the request's own time as its total less that (src/http/overhead.ts).

/** What a call needs of a cancellation signal (a subset of AbortSignal). */
export interface CancelSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * A one-shot cancellation: `abort()` runs each listener once, in order; later calls do nothing. As
 * with EventTarget, a listener that throws does not stop the others: its error is rethrown on the
 * next tick (an uncaught exception, as Node reports a throwing event listener).
 */
export class Cancel implements CancelSignal {
  aborted = false;
  reason: unknown = undefined;
  /** Milliseconds spent waiting on upstreams for this call (see `waitedOn`). */
  upstreamMs = 0;
  #listeners: Array<() => void> | null = null;

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return; // as AbortSignal: a listener added after the abort is never called
    (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const list = this.#listeners;
    const at = list ? list.indexOf(listener) : -1;
    if (at >= 0) list!.splice(at, 1);
  }

  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const list = this.#listeners;
    this.#listeners = null;
    if (!list) return;
    for (const listener of list) {
      try {
        listener();
      } catch (err) {
        process.nextTick(() => {
          throw err;
        });
      }
    }
  }
}

/**
 * Adds `ms` of waiting on an upstream to the call's signal, when it is a Cancel (an AbortSignal, as
 * the voice and job paths pass, keeps no account).
 */
export function waitedOn(signal: CancelSignal, ms: number): void {
  if (signal instanceof Cancel) signal.upstreamMs += ms;
}
