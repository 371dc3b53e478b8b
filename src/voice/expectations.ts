// What a call's listener tells the recogniser about the callee's next utterance, from what the agent
// just said (src/voice/agent.ts keeps it per reply): the agent's words as the prompt (the question
// the callee answers), and, from the intent pack, the shape of the answer and the words to favour.
//   - the pack's ASK for a confirmation (the `initial` decision of an intent with `confirm: true`)
//     expects a yes or a no: key terms are the words of one;
//   - its ASK for a missing entity (an intent's `entities.missing`) expects that entity: an amount,
//     digits (a phone number), a date; key terms are the words they are said with;
//   - anything else expects any in-domain speech: key terms are the pack's own keywords, the
//     heaviest first (as many as a request takes).
// The recognisers that take none of it ignore it (src/shared/recognition-context.ts). The offline
// one also gets the pack's speech domain (its sentences: `speechDomain`), for language models of its
// own (src/speech/language-models.ts) that it decodes the call's turns with.
import { createHash } from 'node:crypto';
import type { IntentPack } from '../intent/pack.ts';
import type { SpeechDomain } from '../speech/language-models.ts';
import { contextOf, KEY_TERM_MAX_CHARS, KEY_TERMS_MAX, type ExpectedAnswer, type RecognitionContext } from '../shared/recognition-context.ts';

/** The words an expected answer is said with (English and the Hinglish the demo pack's callers use). */
const ANSWER_TERMS: Record<ExpectedAnswer, readonly string[]> = {
  yes_no: ['yes', 'no', 'yeah', 'okay', 'sure', 'correct', 'please', 'haan', 'haan ji', 'nahi', 'theek hai', 'no thanks'],
  amount: ['rupees', 'hundred', 'thousand', 'lakh', 'crore', 'hazaar', 'sau', 'rupaye'],
  digits: ['zero', 'oh', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'double', 'triple'],
  date: ['today', 'yesterday', 'tomorrow', 'last week', 'aaj', 'kal', 'parson', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'],
};

/** The entity an ASK for a missing one expects, in order of precedence: an amount, digits (a phone), a date. */
const ENTITY_ANSWERS: [string, ExpectedAnswer][] = [
  ['amount', 'amount'],
  ['phone', 'digits'],
  ['date', 'date'],
];

/** The answer the pack's response `responseId` asks for, or null when it asks for none in particular. */
export function expectationOf(pack: IntentPack, responseId: string): ExpectedAnswer | null {
  for (const intent of pack.intents) {
    const required = intent.entities?.missing.response_id === responseId ? intent.entities.required : [];
    const found = ENTITY_ANSWERS.find(([name]) => (required as readonly string[]).includes(name));
    if (found) return found[1];
  }
  if (pack.intents.some((i) => i.confirm && i.decisions.initial.response_id === responseId)) return 'yes_no';
  return null;
}

/** Each pack's terms, made once per pack (a new version is a new object). */
const TERMS = new WeakMap<IntentPack, string[]>();

/** The pack's keywords with a positive weight, the heaviest first (ties in the pack's order), at most a request's worth. */
function packTerms(pack: IntentPack): string[] {
  let terms = TERMS.get(pack);
  if (!terms) TERMS.set(pack, (terms = termsOf(pack)));
  return terms;
}

function termsOf(pack: IntentPack): string[] {
  const weights = new Map<string, number>();
  for (const intent of pack.intents)
    for (const [word, weight] of Object.entries(intent.keywords ?? {}))
      if (weight > 0 && [...word].length <= KEY_TERM_MAX_CHARS) weights.set(word, Math.max(weights.get(word) ?? 0, weight));
  return [...weights.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, KEY_TERMS_MAX)
    .map(([word]) => word);
}

/**
 * What the recogniser is told about the answer to `said` (the agent's words), `responseId` the
 * pack's response they render (null: not the pack's, an LLM's or the client's own wording).
 */
export function listeningContext(pack: IntentPack | null, responseId: string | null, said: string): RecognitionContext | undefined {
  const expect = pack && responseId ? expectationOf(pack, responseId) : null;
  const keyTerms = expect ? [...ANSWER_TERMS[expect]] : pack ? packTerms(pack) : [];
  return contextOf({ prompt: said.slice(0, 1000), keyTerms, expect });
}

/** The most sentences a pack gives its models (a big pack's first ones): the build stays near a second. */
const MAX_SENTENCES = 5000;

/** The pack's speech domain: its intents' examples and its out-of-scope examples, in every language (the corpus keeps Latin script). */
export function speechDomain(pack: IntentPack): SpeechDomain {
  let domain = DOMAINS.get(pack);
  if (!domain) {
    const sentences = [...pack.intents.flatMap((i) => Object.values(i.examples).flat()), ...(pack.out_of_scope.examples ?? [])].slice(0, MAX_SENTENCES);
    const hash = createHash('sha256').update(JSON.stringify(sentences)).digest('hex').slice(0, 16);
    DOMAINS.set(pack, (domain = { key: `pack:${pack.id}@${pack.version}:${hash}`, sentences }));
  }
  return domain;
}

/** Each pack's domain, made once per pack (a new version is a new object), as its key terms are. */
const DOMAINS = new WeakMap<IntentPack, SpeechDomain>();
