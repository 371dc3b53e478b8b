// Tool calling as the fake upstreams play it, the same for every wire format: offered tools and a
// tool_choice other than none, and the conversation not just answered by a tool, the model calls
// one (the named one, else the first) with `{"query": <the last user text>}`; after a tool's
// result it answers `The tool said: <result>`.

export interface FakeToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** The call the fake model makes, or null when it answers in text. */
export function fakeToolCall(toolNames: string[], choice: unknown, lastUserText: string, answeredByTool: boolean): FakeToolCall | null {
  if (toolNames.length === 0 || choice === 'none' || answeredByTool) return null;
  const named = typeof choice === 'object' && choice !== null ? ((choice as any).function?.name ?? (choice as any).name) : undefined;
  return { id: 'call_fake_1', name: named ?? toolNames[0]!, arguments: JSON.stringify({ query: lastUserText }) };
}

/** The reply after a tool's result. */
export const afterTool = (result: string): string => `The tool said: ${result}`;

/** A text of OpenAI's or Anthropic's content (a string, or parts/blocks with text). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((b: any) => (typeof b?.text === 'string' ? b.text : typeof b?.content === 'string' ? b.content : '')).join('');
}
