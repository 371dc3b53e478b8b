// Which reading of a callee's turn the agent answers (issue 40). The offline recogniser gives a
// call's turn its N best readings (stt-local: pocketsphinx's N best under the pack's model for what
// the agent asked); over μ-law its first best is often a near miss ("now please cancel it", "check
// radio") while a reading a few places down is what was said. The agent answers the first reading
// it understands: after a yes/no question one that is a yes or a no, after an amount's one holding
// an amount, otherwise one its pack classifies with high confidence; none understood, the first
// best as before.
// A reading it understands as another intent counts too, so a callee who answers a yes/no question
// with a new request is not forced into a yes or a no. Measured by `npm run eval:understanding`
// (docs/speech-engines.md): yes/no answers 80 → 95 % right, amounts 90 → 100 %, complaints 51 → 58 %.
import { bareYesNo } from '../intent/acts.ts';
import { bareNumber, findAmount } from '../intent/amounts.ts';
import type { CompiledPack } from '../intent/engine.ts';
import { normalize } from '../intent/normalize.ts';
import type { ExpectedAnswer } from '../shared/recognition-context.ts';

/** Whether the agent understands `reading` when it expects `expect` (undefined: any request of the pack). */
export function understands(pack: CompiledPack, expect: ExpectedAnswer | undefined, reading: string): boolean {
  const norm = normalize(reading);
  if (expect === 'yes_no' && bareYesNo(norm.tokens) !== null) return true;
  if ((expect === 'amount' || expect === 'digits') && (findAmount(reading) ?? bareNumber(reading)) !== null) return true;
  // A request it is sure of: a KNOWN of medium or low confidence is what a near miss gets ("uh the"
  // was a wrong-amount complaint at 0.63).
  const r = pack.classify(norm);
  return r.classification === 'KNOWN' && r.intent?.band === 'HIGH';
}

/** The first of `readings` (the recogniser's, best first) the agent understands; null when none. */
export function firstUnderstood(pack: CompiledPack, expect: ExpectedAnswer | undefined, readings: readonly string[]): string | null {
  return readings.find((r) => r.trim() !== '' && understands(pack, expect, r)) ?? null;
}
