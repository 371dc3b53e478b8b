// Token counting with a real tokenizer (gpt-tokenizer, o200k_base, bundled with the package: nothing
// downloads). Used for context-window checks, hold estimates, and usage when an upstream reports none.
// Message overhead follows OpenAI's published accounting: 3 tokens per message plus 3 to prime the
// reply. For non-OpenAI upstreams the count is an estimate; their own usage wins when they report it.
//
// Most calls never need the exact count: a text's UTF-8 length bounds it from above (every o200k
// token is at least one byte), and that bound settles the context check and the hold whenever the
// window and the wallet leave room for it. `PromptTokens` runs the tokenizer only when asked for the
// exact figure: a prompt near the window, a wallet the bound's hold would refuse, an upstream that
// reports no usage. A gateway whose upstreams report usage never loads the tokenizer, whose tables
// took ~50 MiB of its memory (RSS after a first chat call: 200 MiB with it, 149 without).
import { createRequire } from 'node:module';
import type * as O200kBase from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatMessage } from '../providers/types.ts';

// The tokenizer and its table (~0.2 s of CPU to load) are loaded at the first count, not with the
// gateway. Its CommonJS build, so that the first count stays synchronous.
const load = createRequire(import.meta.url);
let o200k: typeof O200kBase | undefined;
/** Special tokens' text (`<|endoftext|>`) in a prompt is ordinary text, as the upstreams read it: never a refusal. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

export const countText = (text: string): number =>
  text.length === 0 ? 0 : (o200k ??= load('gpt-tokenizer/encoding/o200k_base') as typeof O200kBase).countTokens(text, AS_TEXT);

/** At least countText(text), without the tokenizer: the text's UTF-8 length. */
export const boundText = (text: string): number => Buffer.byteLength(text);

/** A conversation's tokens, counted with `measure` (countText, or boundText for the bound). */
export function countMessages(messages: readonly ChatMessage[], measure = countText): number {
  let n = 3;
  for (const m of messages) {
    n += 3 + measure(m.role) + measure(m.content ?? '');
    if (m.tool_calls !== undefined) n += countTools(m.tool_calls, measure);
    if (m.tool_call_id !== undefined) n += measure(m.tool_call_id);
  }
  return n;
}

/** Tool definitions or calls as the model reads them: their JSON (an estimate, as the upstreams' formats differ). */
export function countTools(tools: readonly unknown[] | undefined, measure = countText): number {
  return tools === undefined || tools.length === 0 ? 0 : measure(JSON.stringify(tools));
}

/**
 * A prompt's token count: `bound` (no tokenizer) at once, `exact` (the tokenizer) when first asked
 * for and then kept. `known` is the exact count once it was asked for, else the bound.
 */
export class PromptTokens {
  #exact: number | undefined;

  /** `count(measure)` counts the whole prompt with `measure`: boundText for the bound, countText exactly. */
  constructor(private readonly count: (measure: (text: string) => number) => number) {
    this.bound = count(boundText);
  }

  readonly bound: number;

  get exact(): number {
    return (this.#exact ??= this.count(countText));
  }

  get known(): number {
    return this.#exact ?? this.bound;
  }

  /** Whether `exact` was taken already. */
  get isExact(): boolean {
    return this.#exact !== undefined;
  }

  /** Counts exactly (Meter's `tighten`, when the wallet refused the bound's hold); whether that lowered `known`. */
  tighten(): boolean {
    return !this.isExact && this.exact < this.bound;
  }
}
