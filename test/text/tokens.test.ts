// The prompt's token count: the UTF-8 bound is never below the tokenizer's count, so a check or a
// hold the bound passes would pass exactly too; the tokenizer runs only when the exact count is asked for.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { boundText, countMessages, countText, countTools, PromptTokens } from '../../src/text/tokens.ts';
import type { ChatMessage } from '../../src/providers/types.ts';

const TEXTS = [
  '',
  'a',
  'Hello, world! How are you today?',
  'héllo wörld — naïve café',
  '你好，世界。今天天气很好。',
  'नमस्ते दुनिया, आप कैसे हैं?',
  '🎉🎉🎉 👩‍👩‍👧‍👦 emoji sequences',
  ' '.repeat(50) + '\n\n\t\t' + 'x'.repeat(3000),
  'a1b2c3'.repeat(200),
  '{"type":"object","properties":{"name":{"type":"string"}}}',
  '\u0000\u0001\u0002 control bytes',
];

describe('token counts', () => {
  it('a text’s UTF-8 length is never below its token count', () => {
    for (const text of TEXTS)
      assert.ok(boundText(text) >= countText(text), `${JSON.stringify(text.slice(0, 30))}: bound ${boundText(text)} < ${countText(text)}`);
  });

  it('the bound of a conversation, tool calls included, is never below its count', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: TEXTS[3]! },
      { role: 'user', content: TEXTS[4]! },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"rivers"}' } }] },
      { role: 'tool', content: TEXTS[7]!, tool_call_id: 'call_1' },
    ];
    assert.ok(countMessages(messages, boundText) >= countMessages(messages));
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }];
    assert.ok(countTools(tools, boundText) >= countTools(tools));
  });

  it("special tokens' text is ordinary text, counted, never refused", () => {
    const text = 'before <|endoftext|> after <|im_start|>';
    assert.ok(countText(text) > 4);
    assert.ok(boundText(text) >= countText(text));
  });

  it('PromptTokens measures with the bound at once and with the tokenizer only when the exact count is asked for', () => {
    const measures: string[] = [];
    const prompt = new PromptTokens((measure) => {
      measures.push(measure === boundText ? 'bound' : measure === countText ? 'exact' : 'other');
      return measure('tell me about rivers, please');
    });
    assert.deepEqual(measures, ['bound']);
    assert.equal(prompt.isExact, false);
    assert.equal(prompt.known, prompt.bound);
    assert.equal(prompt.exact, countText('tell me about rivers, please'));
    assert.equal(prompt.exact, prompt.exact);
    assert.deepEqual(measures, ['bound', 'exact'], 'counted once');
    assert.ok(prompt.isExact && prompt.known === prompt.exact && prompt.exact < prompt.bound);
    assert.equal(prompt.tighten(), false, 'already exact: nothing lowered');
    const fresh = new PromptTokens((measure) => measure('tell me about rivers, please'));
    assert.equal(fresh.tighten(), true, 'the exact count lowered the figure');
    assert.equal(fresh.known, fresh.exact);
  });
});
