// Token counting with a real tokenizer (gpt-tokenizer, o200k_base, bundled with the package: nothing
// downloads). Used for context-window checks, hold estimates, and usage when an upstream reports none.
// Message overhead follows OpenAI's published accounting: 3 tokens per message plus 3 to prime the
// reply. For non-OpenAI upstreams the count is an estimate; their own usage wins when they report it.
import { createRequire } from 'node:module';
import type * as O200kBase from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatMessage } from '../providers/types.ts';

// The tokenizer and its table (~0.2 s of CPU to load) are loaded at the first count, not with the
// gateway: a start, or a test process, that counts no tokens does not pay for them. Its CommonJS
// build, so that the first count stays synchronous.
const load = createRequire(import.meta.url);
let o200k: typeof O200kBase | undefined;

export const countText = (text: string): number => (text.length === 0 ? 0 : (o200k ??= load('gpt-tokenizer/encoding/o200k_base') as typeof O200kBase).countTokens(text));

export function countMessages(messages: readonly ChatMessage[]): number {
  let n = 3;
  for (const m of messages) {
    n += 3 + countText(m.role) + countText(m.content ?? '');
    if (m.tool_calls !== undefined) n += countTools(m.tool_calls);
    if (m.tool_call_id !== undefined) n += countText(m.tool_call_id);
  }
  return n;
}

/** Tool definitions or calls as the model reads them: their JSON (an estimate, as the upstreams' formats differ). */
export function countTools(tools: readonly unknown[] | undefined): number {
  return tools === undefined || tools.length === 0 ? 0 : countText(JSON.stringify(tools));
}
