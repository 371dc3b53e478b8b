// What a call's agent tells its recogniser (issue 40): the conversation's domain (the intent pack's
// sentences, for the offline engine's language models: src/speech/language-models.ts) and, after each
// question, the shape of the answer it waits for: a yes or no after a question that confirms an
// action, an amount or digits after the ASK for such an entity. From the pack's own metadata, so
// every pack gets it without configuration.
import { createHash } from 'node:crypto';
import type { IntentPack } from '../intent/pack.ts';
import type { Expectation } from '../speech/corpus.ts';
import type { SpeechDomain } from '../speech/language-models.ts';

/** The most sentences a pack gives its models (a big pack's first ones): the build stays near a second. */
const MAX_SENTENCES = 5000;

/** Entities a callee answers with an amount, or with digits read one by one. */
const AMOUNT_ENTITIES: ReadonlySet<string> = new Set(['amount']);
const DIGIT_ENTITIES: ReadonlySet<string> = new Set(['phone', 'account', 'account_number', 'otp', 'pin', 'digits']);

/** The pack's speech domain: its intents' examples and its out-of-scope examples, in every language (the corpus keeps Latin script). */
export function speechDomain(pack: IntentPack): SpeechDomain {
  const sentences = [...pack.intents.flatMap((i) => Object.values(i.examples).flat()), ...(pack.out_of_scope.examples ?? [])].slice(0, MAX_SENTENCES);
  const hash = createHash('sha256').update(JSON.stringify(sentences)).digest('hex').slice(0, 16);
  return { key: `pack:${pack.id}@${pack.version}:${hash}`, sentences };
}

/**
 * What the callee is expected to answer the pack's response `responseId` with: `yes_no` when it is
 * the question of an intent that confirms before acting (`confirm`, its `initial` decision), an
 * `amount` or `digits` when it asks for such a required entity; null for anything else.
 */
export function expectationAfter(pack: IntentPack, responseId: string | null): Expectation | null {
  if (responseId === null) return null;
  for (const i of pack.intents) {
    if (i.entities && i.entities.missing.response_id === responseId) {
      if (i.entities.required.some((n) => AMOUNT_ENTITIES.has(n))) return 'amount';
      if (i.entities.required.some((n) => DIGIT_ENTITIES.has(n))) return 'digits';
    }
  }
  if (pack.intents.some((i) => i.confirm === true && i.decisions.initial.response_id === responseId)) return 'yes_no';
  return null;
}
