// Status callbacks as the fake carriers (test/fakes/exotel.ts, test/fakes/twilio.ts) deliver them on a
// bad day, per callee number: carriers retry a failed callback once or twice and then give up
// (Exotel: twice), deliver best effort (Twilio), late, more than once and out of order; Exotel posts
// a form by default, JSON or multipart when the call asked (StatusCallbackContentType). Unset, a
// call's callbacks come as the fakes always delivered them: each twice, the answer's followed by a
// stale `ringing`.

export interface BadDay {
  /** The answer's callbacks never come (the stale `ringing` after them still does). */
  dropAnswered?: boolean;
  /** The answer's callbacks come this many ms after the answer. */
  answeredDelayMs?: number;
  /** Each callback is posted this many times (default 2). */
  repeat?: number;
  /** The answer's callbacks are held back and posted after the terminal ones. */
  reorder?: boolean;
  /** How the body is encoded (Exotel's StatusCallbackContentType; Twilio posts forms only). */
  encoding?: 'form' | 'json' | 'multipart';
}

/** One call's callbacks, in the order and number the day has them. */
export class CallbackDay {
  private held: (() => Promise<void>)[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(readonly day: BadDay = {}) {}

  private get repeat(): number {
    return this.day.repeat ?? 2;
  }

  /** The answer's callbacks (`post`, repeated), then a stale `ringing`: dropped, late or held back as the day has them. */
  answered(post: () => Promise<unknown>, staleRinging: () => Promise<unknown>): void {
    const run = async () => {
      if (!this.day.dropAnswered) for (let i = 0; i < this.repeat; i++) await post();
      await staleRinging();
    };
    if (this.day.reorder) this.held.push(run);
    else if (this.day.answeredDelayMs) {
      const t = setTimeout(() => {
        this.timers.delete(t);
        void run();
      }, this.day.answeredDelayMs);
      this.timers.add(t);
    } else void run();
  }

  /** The terminal callbacks (`post`, repeated), then whatever was held back. */
  async ended(post: () => Promise<unknown>): Promise<void> {
    for (let i = 0; i < this.repeat; i++) await post();
    for (const run of this.held.splice(0)) await run();
  }

  /** Late callbacks not sent yet are dropped (the fake is closing). */
  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}

/** The fields a JSON callback carries as numbers. */
const NUMBERS = new Set(['ConversationDuration', 'Duration', 'CallDuration']);

/**
 * A callback's body in the day's encoding: a form, a JSON object (numbers as numbers, as Exotel's
 * JSON has them; `nested` added as is) or multipart fields (fetch writes the boundary).
 */
export function callbackBody(
  params: [string, string][],
  encoding: BadDay['encoding'] = 'form',
  nested: Record<string, unknown> = {},
): { body: string | FormData; headers: Record<string, string> } {
  if (encoding === 'json') {
    const values = Object.fromEntries(params.map(([k, v]) => [k, NUMBERS.has(k) ? Number(v) : v]));
    return { body: JSON.stringify({ ...values, ...nested }), headers: { 'content-type': 'application/json' } };
  }
  if (encoding === 'multipart') {
    const form = new FormData();
    for (const [k, v] of params) form.append(k, v);
    return { body: form, headers: {} };
  }
  return { body: new URLSearchParams(params).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
}
