// Scoring an intent pack on labelled turns, as a bot would act on them: KNOWN with the right intent
// is right; KNOWN with another intent is a wrong action (the bot acts on the wrong complaint);
// anything else (AMBIGUOUS, UNKNOWN, OUT_OF_SCOPE) asks back, which is right for a turn the pack
// should not act on (labelled OUT_OF_SCOPE). Used by the evaluation (scripts/eval-demo-pack.ts) and
// by operators checking a pack before it goes live (POST /admin/intent-packs/{id}/evaluate).
import { performance } from 'node:perf_hooks';
import type { CascadeResult, CompiledPack } from './engine.ts';
import { normalize } from './normalize.ts';

/** The label of a turn the pack should not act on. */
export const OUT_OF_SCOPE = 'OUT_OF_SCOPE';

export interface LabelledTurn {
  text: string;
  /** An intent id of the pack, or OUT_OF_SCOPE. */
  gold: string;
  /** A group to report apart (a language, a channel...), optional. */
  group?: string;
}

export type Outcome = 'right' | 'wrong' | 'asked';

/** A turn with what the pack did with it. */
export type TurnScore<T extends LabelledTurn = LabelledTurn> = T & {
  outcome: Outcome;
  /** What the cascade said: the intent when KNOWN, else the classification. */
  said: string;
  result: CascadeResult;
  ms: number;
};

export function scoreTurns<T extends LabelledTurn>(pack: CompiledPack, turns: T[]): TurnScore<T>[] {
  return turns.map((t) => {
    const t0 = performance.now();
    const r = pack.classify(normalize(t.text));
    const ms = performance.now() - t0;
    const said = r.classification === 'KNOWN' && r.intent ? r.intent.id : r.classification;
    const acted = r.classification === 'KNOWN';
    const outcome: Outcome = t.gold === OUT_OF_SCOPE ? (acted ? 'wrong' : 'right') : !acted ? 'asked' : said === t.gold ? 'right' : 'wrong';
    return { ...t, outcome, said, result: r, ms };
  });
}

export interface TurnsSummary {
  turns: number;
  /** Share of all turns answered right (the intent, or not acting on an out-of-scope turn). */
  accuracy: number;
  /** In-scope turns: KNOWN with the right intent. */
  inscope_accuracy: number;
  /** Out-of-scope turns not acted on. */
  oos_recall: number;
  /** Turns not acted on that were out of scope. */
  oos_precision: number;
  /** Macro-F1 over the intents and OUT_OF_SCOPE, a turn not acted on counting as OUT_OF_SCOPE. */
  macro_f1: number;
  /** Share of all turns acted on with an intent that is not theirs. */
  wrong_action_rate: number;
  /**
   * Right answers per group (the turns' `group`, when they have one). Groups are the caller's
   * labels, so they are counted in a Map and become own keys only: "__proto__" is a group too.
   */
  by_group: Record<string, { turns: number; right: number }>;
  p99_ms: number;
}

export function summarize(scores: TurnScore[]): TurnsSummary {
  const share = (xs: TurnScore[], o: Outcome) => (xs.length ? xs.filter((s) => s.outcome === o).length / xs.length : 0);
  const inScope = scores.filter((s) => s.gold !== OUT_OF_SCOPE);
  const oos = scores.filter((s) => s.gold === OUT_OF_SCOPE);
  const groups = new Map<string, { turns: number; right: number }>();
  for (const s of scores) {
    if (s.group === undefined) continue;
    let g = groups.get(s.group);
    if (!g) groups.set(s.group, (g = { turns: 0, right: 0 }));
    g.turns++;
    if (s.outcome === 'right') g.right++;
  }
  const ms = scores.map((s) => s.ms).sort((a, b) => a - b);
  const predicted = (s: TurnScore) => (s.outcome === 'asked' || (s.gold === OUT_OF_SCOPE && s.outcome === 'right') ? OUT_OF_SCOPE : s.said);
  const labels = new Set(scores.flatMap((s) => [s.gold, predicted(s)]));
  let f1 = 0;
  for (const l of labels) {
    const tp = scores.filter((s) => s.gold === l && predicted(s) === l).length;
    const wrong = scores.filter((s) => (s.gold === l) !== (predicted(s) === l)).length;
    f1 += tp === 0 ? 0 : (2 * tp) / (2 * tp + wrong);
  }
  const notActed = scores.filter((s) => predicted(s) === OUT_OF_SCOPE);
  return {
    turns: scores.length,
    accuracy: share(scores, 'right'),
    inscope_accuracy: share(inScope, 'right'),
    oos_recall: share(oos, 'right'),
    oos_precision: notActed.length ? notActed.filter((s) => s.gold === OUT_OF_SCOPE).length / notActed.length : 0,
    macro_f1: labels.size ? f1 / labels.size : 0,
    wrong_action_rate: share(scores, 'wrong'),
    by_group: Object.fromEntries(groups), // defines own properties, never a prototype
    p99_ms: ms[Math.min(ms.length - 1, Math.floor(0.99 * ms.length))] ?? 0,
  };
}
