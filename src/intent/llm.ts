// The cascade's optional third stage: only for turns the deterministic matcher and the local model
// left AMBIGUOUS or UNKNOWN, and only when the intent model has routes (an llm behind it). The
// prompt lists the pack's intent ids; an answer that is not exactly one of them (or OUT_OF_SCOPE)
// is ignored and the earlier result stands. Any failure of the upstream also keeps it: the turn is
// still answered (and billed once).
import { performance } from 'node:perf_hooks';
import type { ResolvedRoute } from '../providers/types.ts';
import type { UpstreamRouter } from '../providers/router.ts';
import type { CascadeResult, CompiledPack } from './engine.ts';

const TIMEOUT_MS = 10_000;

export async function llmFallback(
  router: UpstreamRouter,
  routes: ResolvedRoute[],
  pack: CompiledPack,
  text: string,
  earlier: CascadeResult,
): Promise<CascadeResult> {
  const started = performance.now();
  const ids = [...pack.intents.keys()];
  const described = pack.pack.intents.map((i) => `- ${i.id}${i.description ? `: ${i.description}` : ''}`).join('\n');
  const signal = AbortSignal.timeout(TIMEOUT_MS);
  try {
    const { result } = await router.complete(
      routes,
      {
        messages: [
          {
            role: 'system',
            content:
              'You classify one customer turn (English, Hindi or Hinglish) into exactly one intent id from this list, ' +
              'or OUT_OF_SCOPE when it belongs to none. Answer with the id only.\n' +
              described,
          },
          { role: 'user', content: text },
        ],
        temperature: 0,
        max_tokens: 20,
      },
      signal,
    );
    const answer = (result.choices[0]?.message.content ?? '').trim().replace(/^["'`]|["'`.]$/g, '');
    const ms = performance.now() - started;
    const stageMs = { ...earlier.stageMs, llm_fallback: ms };
    if (answer === 'OUT_OF_SCOPE') return { ...earlier, classification: 'OUT_OF_SCOPE', intent: null, classifier_used: 'llm_fallback', stageMs };
    if (!ids.includes(answer)) return { ...earlier, stageMs };
    // A constrained answer is a single label, not a probability: reported as MEDIUM confidence.
    const confidence = 0.7;
    return {
      classification: 'KNOWN',
      intent: { id: answer, confidence, band: pack.band(confidence) },
      candidates: [...earlier.candidates, { id: answer, score: confidence, source: 'llm_fallback' }],
      classifier_used: 'llm_fallback',
      stageMs,
    };
  } catch {
    return { ...earlier, stageMs: { ...earlier.stageMs, llm_fallback: performance.now() - started } };
  }
}
