// The simulator's transfer callee: the party a transferred call is put through to (the carrier's
// `<Dial>`, src/voice/transfer.ts). Its script is the callee whose `to` is the number dialled (the
// same `voice.simulator.callees`): it rings `ring_ms`, then answers (its `silence_ms` steps are the
// conversation with the callee, which the gateway no longer hears; `hangup` ends it; with no
// `hangup` it stays until the call is hung up), or is busy, does not answer or fails: then the
// dial fails and the call ends, as Twilio's does when a `<Dial>` with no further TwiML fails.
import { setTimeout as sleep } from 'node:timers/promises';
import type { CalleeScript } from '../../config.ts';

/** How long an unanswered transfer rings before the dial gives up (Twilio's `<Dial timeout>` default). */
const DIAL_TIMEOUT_MS = 30_000;

/** Rings and talks as `script` says; resolves with whether it answered, once its part of the call is over (or `signal` ended it). */
export async function putThrough(script: CalleeScript, signal: AbortSignal): Promise<{ answered: boolean }> {
  const wait = (ms: number) =>
    sleep(ms, undefined, { signal }).then(
      () => true,
      () => false,
    );
  if (script.answer === 'no_answer') {
    await wait(DIAL_TIMEOUT_MS);
    return { answered: false };
  }
  if (!(await wait(script.ring_ms ?? 1000))) return { answered: script.answer === 'answer' };
  if (script.answer !== 'answer') return { answered: false };
  for (const step of script.steps) {
    if ('hangup' in step) return { answered: true };
    if ('silence_ms' in step && !(await wait(step.silence_ms))) return { answered: true };
  }
  await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
  return { answered: true };
}
