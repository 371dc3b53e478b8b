// An intent pack is data, not code: intents with dotted upper-case ids, examples per language,
// patterns, weighted keywords, out-of-scope vocabulary, entity requirements and, per intent, the
// decision for the initial ask and for the confirmed path, plus a catalog of response ids with their
// wording per language and channel. `validatePack` checks the shape (TypeBox) and the references
// between parts, and names the first problem by its path.
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { ENTITY_NAMES } from './entities.ts';

const Closed = <T extends Parameters<typeof Type.Object>[0]>(props: T) => Type.Object(props, { additionalProperties: false });

export const INTENT_ID = '^[A-Z][A-Z0-9_]*(\\.[A-Z][A-Z0-9_]*)+$';
const UPPER = '^[A-Z][A-Z0-9_]*$';
const Lang = Type.String({ pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$', maxLength: 35 });
const Text = Type.String({ minLength: 1, maxLength: 500 });

export const DecisionSchema = Closed({
  action: Type.String({ pattern: UPPER, maxLength: 64 }),
  next_state: Type.String({ pattern: UPPER, maxLength: 64 }),
  response_id: Type.String({ pattern: '^[A-Z][A-Z0-9_.]*$', maxLength: 128 }),
});
export type Decision = Static<typeof DecisionSchema>;

const IntentSchema = Closed({
  id: Type.String({ pattern: INTENT_ID, maxLength: 128 }),
  description: Type.Optional(Type.String({ maxLength: 500 })),
  /** Example turns per language (romanized Hindi/Hinglish goes with hi-IN, beside Devanagari). */
  examples: Type.Record(Type.String(), Type.Array(Text, { maxItems: 5000 })),
  /** Regular expressions over the normalized text (lower-case, romanized, canonical spellings). */
  patterns: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 500 }), { maxItems: 200 })),
  /** Word or phrase → weight (written in any spelling: they are normalized like the turns). */
  keywords: Type.Optional(Type.Record(Type.String(), Type.Number({ minimum: -10, maximum: 10 }))),
  entities: Type.Optional(
    Closed({
      required: Type.Array(Type.Union(ENTITY_NAMES.map((n) => Type.Literal(n))), { maxItems: 4 }),
      /** The decision while a required entity is missing (from the turn and the session). */
      missing: DecisionSchema,
    }),
  ),
  /** Whether acting needs a yes/no first: then `initial` asks and `confirmed` acts. */
  confirm: Type.Boolean(),
  decisions: Closed({
    initial: DecisionSchema,
    confirmed: Type.Optional(DecisionSchema),
    denied: Type.Optional(DecisionSchema),
  }),
});
export type IntentDef = Static<typeof IntentSchema>;

const ChannelTexts = Closed({ text: Text, voice: Text });

export const PackSchema = Closed({
  id: Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,63}$' }),
  version: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }),
  description: Type.Optional(Type.String({ maxLength: 1000 })),
  languages: Type.Array(Lang, { minItems: 1, maxItems: 50 }),
  thresholds: Type.Optional(
    Closed({
      /** Lexical score the deterministic matcher needs to answer alone. */
      deterministic: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })),
      /** Calibrated probability below which the local model's answer is UNKNOWN. */
      accept: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
      /** Top-two probability gap under which the answer is AMBIGUOUS. */
      margin: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
      /** Band edges: confidence ≥ high is HIGH, ≥ medium MEDIUM, else LOW. */
      high: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
      medium: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
      /** Probability of the out-of-scope class above which the turn is OUT_OF_SCOPE. */
      out_of_scope: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
      /**
       * Cosine similarity of the best intent's nearest training example below which the local
       * model's answer is not KNOWN (0, the default, is off). It needs the example memory, which a
       * pack keeps when its median intent has under 40 examples; on bigger packs it has no effect.
       */
      min_similarity: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
      /**
       * Cosine similarity the nearest out-of-scope example must reach for a turn the local model
       * turns down to be OUT_OF_SCOPE rather than UNKNOWN (0, the default, is off; needs the example
       * memory, as min_similarity). Out-of-scope keywords in the turn count as reaching it.
       */
      out_of_scope_similarity: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
      /** With `out_of_scope.detector`: the detector's probability a turn needs for KNOWN (default 0.5). */
      detector: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    }),
  ),
  out_of_scope: Closed({
    /**
     * Words and phrases that mark a turn as outside the domain when no intent keyword matched, and
     * beside an intent's keywords keep the deterministic stage from answering alone.
     */
    keywords: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 5000 }),
    /** Example out-of-domain turns: an extra class of the local model. */
    examples: Type.Optional(Type.Array(Text, { maxItems: 20_000 })),
    /**
     * A learned accept/reject decision for the local model (detector.ts) in place of the accept,
     * out-of-scope and similarity thresholds, trained at load from `folds` (default 5) extra
     * models of the pack (so loading takes about folds + 1 times longer). Needs `examples`.
     */
    detector: Type.Optional(
      Closed({
        folds: Type.Optional(Type.Integer({ minimum: 2, maximum: 10 })),
        seed: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1 })),
      }),
    ),
  }),
  /**
   * A second local model of another family trained beside the logistic regression on the same
   * features (ensemble.ts), its calibrated probabilities mixed in at `weight` (0 to 1). Off unless
   * set; `alpha` is the naive Bayes models' smoothing (default 1). `reject` is what the accept,
   * out-of-scope-class and similarity tests read: `mixed` (default) the mixed probabilities, `linear`
   * the linear model's own (neighbour vote in, second model out) for the mixed ranking's best intent,
   * so the mix picks the intent and the logistic regression alone decides whether to answer; `split`
   * the mixed probabilities for the out-of-scope-class tests (its out-of-scope probability against
   * `out_of_scope`, and whether it is the mix's best label) and the linear model's probability of
   * the mix's best intent for `accept` (and the confidence). The similarity test reads that intent's
   * nearest-example cosine in every case (the second model has no part in it).
   */
  ensemble: Type.Optional(
    Closed({
      model: Type.Union([Type.Literal('complement_nb'), Type.Literal('nearest_centroid'), Type.Literal('char_nb')]),
      weight: Type.Number({ minimum: 0, maximum: 1 }),
      alpha: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 10 })),
      reject: Type.Optional(Type.Union([Type.Literal('mixed'), Type.Literal('linear'), Type.Literal('split')])),
    }),
  ),
  /** Decisions when no intent is acted on, and for greetings, thanks and goodbyes. */
  fallback: Closed({
    unknown: DecisionSchema,
    ambiguous: DecisionSchema,
    out_of_scope: DecisionSchema,
    /** An out-of-scope turn right after one that took `out_of_scope` (default: `out_of_scope` again). */
    out_of_scope_again: Type.Optional(DecisionSchema),
    greeting: Type.Optional(DecisionSchema),
    thanks: Type.Optional(DecisionSchema),
    goodbye: Type.Optional(DecisionSchema),
    /** A bare yes/no when nothing awaits one. */
    stray_yes_no: Type.Optional(DecisionSchema),
  }),
  intents: Type.Array(IntentSchema, { minItems: 1, maxItems: 2000 }),
  /** response_id → language → {text, voice}: the wording a client renders (never returned by us). */
  responses: Type.Record(Type.String({ pattern: '^[A-Z][A-Z0-9_.]*$' }), Type.Record(Type.String(), ChannelTexts)),
});
export type IntentPack = Static<typeof PackSchema>;

export class PackError extends Error {
  override name = 'PackError';
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`intent pack: ${path ? `${path}: ` : ''}${message}`);
  }
}

/** Validates a pack; throws PackError naming the first problem (shape, then references). */
export function validatePack(raw: unknown): IntentPack {
  if (!Value.Check(PackSchema, raw)) {
    const errors = [...Value.Errors(PackSchema, raw)];
    const first = errors.sort((a, b) => b.instancePath.length - a.instancePath.length)[0];
    const path = first?.instancePath.replace(/^\//, '').replaceAll('/', '.') ?? '';
    const unknown = first?.keyword === 'additionalProperties' || first?.keyword === 'boolean';
    throw new PackError(path, unknown ? 'is not a known field' : (first?.message ?? 'is invalid'));
  }
  const pack = raw as IntentPack;
  const langs = new Set(pack.languages);
  const seen = new Set<string>();
  const decisions: [string, Decision][] = Object.entries(pack.fallback).map(([k, d]) => [`fallback.${k}`, d as Decision]);
  pack.intents.forEach((intent, i) => {
    const at = `intents.${i}`;
    if (seen.has(intent.id)) throw new PackError(`${at}.id`, `duplicate intent id ${intent.id}`);
    seen.add(intent.id);
    let count = 0;
    for (const [lang, list] of Object.entries(intent.examples)) {
      if (!langs.has(lang)) throw new PackError(`${at}.examples.${lang}`, `language ${lang} is not one of the pack's languages (${pack.languages.join(', ')})`);
      count += list.length;
    }
    if (count === 0 && !intent.patterns?.length && !Object.keys(intent.keywords ?? {}).length) {
      throw new PackError(`${at}.examples`, `intent ${intent.id} has no examples, patterns or keywords`);
    }
    (intent.patterns ?? []).forEach((p, j) => {
      try {
        new RegExp(p, 'u');
      } catch (err) {
        throw new PackError(`${at}.patterns.${j}`, `not a valid regular expression: ${(err as Error).message}`);
      }
    });
    if (intent.confirm && !intent.decisions.confirmed)
      throw new PackError(`${at}.decisions.confirmed`, 'an intent with confirm: true needs a confirmed decision');
    if (intent.confirm && !intent.decisions.denied) throw new PackError(`${at}.decisions.denied`, 'an intent with confirm: true needs a denied decision');
    if (intent.confirm && intent.decisions.initial.action !== 'ASK')
      throw new PackError(`${at}.decisions.initial.action`, 'an intent with confirm: true asks first: its initial action must be ASK');
    decisions.push([`${at}.decisions.initial`, intent.decisions.initial]);
    if (intent.decisions.confirmed) decisions.push([`${at}.decisions.confirmed`, intent.decisions.confirmed]);
    if (intent.decisions.denied) decisions.push([`${at}.decisions.denied`, intent.decisions.denied]);
    if (intent.entities) decisions.push([`${at}.entities.missing`, intent.entities.missing]);
  });
  for (const [path, d] of decisions) {
    // Own keys only: the pack's records are keyed by its author, and a prototype is not a wording.
    const texts = Object.hasOwn(pack.responses, d.response_id) ? pack.responses[d.response_id] : undefined;
    if (!texts) throw new PackError(`${path}.response_id`, `response ${d.response_id} is not in responses`);
    for (const lang of pack.languages) {
      if (!Object.hasOwn(texts, lang)) throw new PackError(`responses.${d.response_id}`, `no wording for language ${lang}`);
    }
  }
  return pack;
}
