// LlamaIndex's OpenAI LLMs (@llamaindex/openai on openai-node 5, with `llamaindex`'s tools and
// agent) against the gateway: `OpenAI` (chat completions) and `OpenAIResponses` (the Responses API),
// each plain, streaming, with tools on a tools-enabled model (a call, its result, the answer, and
// the agent loop), structured output, and the refusals on a model without tools with the spec's
// code as the OpenAI error LlamaIndex lets through.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenAI, OpenAIAgent, OpenAIResponses } from '@llamaindex/openai';
import { tool, type ChatMessage, type ToolCallLLM } from 'llamaindex';
import { z } from 'zod';
import { CITY_JSON, openaiRefusal, recordingFetch, sentRoles, startClientFixture, type ClientFixture } from './fixture.ts';

const weather = tool({
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: z.object({ query: z.string() }),
  execute: ({ query }) => `sunny in ${query}`,
});
const City = z.object({ city: z.string(), population: z.number() });

// LangChain and LlamaIndex rethrow openai-node's APIError as it is.
const refused = openaiRefusal;

type Make = (model: string, apiKey: string, over?: Record<string, unknown>) => ToolCallLLM;
const LLMS: [string, Make][] = [
  ['OpenAI (chat completions)', (model, apiKey, over = {}) => new OpenAI({ model, apiKey, maxRetries: 0, ...over })],
  ['OpenAIResponses (Responses API)', (model, apiKey, over = {}) => new OpenAIResponses({ model, apiKey, maxRetries: 0, ...over })],
];

describe("LlamaIndex's OpenAI LLMs", () => {
  let f: ClientFixture;
  before(async () => {
    f = await startClientFixture();
  });
  after(() => f.close());

  for (const [name, make] of LLMS) {
    describe(name, () => {
      const llm = (model: string, over: Record<string, unknown> = {}) => make(model, f.key, { baseURL: f.baseURL, ...over });

      it('plain: chat and complete', async () => {
        const r = await llm('plain').chat({
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'tell me about rivers' },
          ],
        });
        assert.equal(r.message.content, 'You said: tell me about rivers');
        assert.deepEqual(f.lastUpstreamBody().messages[0], { role: 'system', content: 'Be brief.' });
        const c = await llm('plain').complete({ prompt: 'hello' });
        assert.equal(c.text, 'You said: hello');
      });

      it('streaming: the deltas add up', async () => {
        let text = '';
        let n = 0;
        for await (const chunk of await llm('plain').chat({ messages: [{ role: 'user', content: 'tell me about rivers' }], stream: true })) {
          // OpenAIResponses repeats the last delta on each later event (output_text.done...,
          // response.completed), as it does against OpenAI: only the delta events carry text.
          const raw = chunk.raw as { type?: string } | null;
          if (raw?.type !== undefined && raw.type !== 'response.output_text.delta') continue;
          text += chunk.delta;
          n++;
        }
        assert.equal(text, 'You said: tell me about rivers');
        assert.ok(n > 1);
      });

      for (const id of ['agent', 'claude-agent']) {
        it(`tools on ${id}: a call, its result, the answer; the agent loop (chat completions)`, async () => {
          const m = llm(id);
          const messages: ChatMessage[] = [{ role: 'user', content: 'Paris' }];
          const first = await m.chat({ messages, tools: [weather] });
          const calls = (first.message.options as any)?.toolCall ?? [];
          assert.deepEqual(
            calls.map((c: any) => [c.name, typeof c.input === 'string' ? JSON.parse(c.input) : c.input]),
            [['get_weather', { query: 'Paris' }]],
          );
          const second = await m.chat({
            messages: [
              ...messages,
              { role: 'assistant', content: '', options: { toolCall: calls } },
              { role: 'user', content: 'sunny in Paris', options: { toolResult: { id: calls[0].id, result: 'sunny in Paris', isError: false } } },
            ],
            tools: [weather],
          });
          assert.equal(second.message.content, 'The tool said: sunny in Paris');

          // The agent only on chat completions: OpenAIResponses marks every answer as a tool call
          // (an empty `toolCall` list), so LlamaIndex's agent never stops, against OpenAI as here.
          if (!(m instanceof OpenAI)) return;
          const agent = new OpenAIAgent({ llm: m, tools: [weather] });
          const answer = await agent.chat({ message: 'Paris' });
          assert.equal(answer.message.content, 'The tool said: sunny in Paris');
        });
      }

      it('structured output: a zod schema as response_format (OpenAI), text.format (OpenAIResponses)', async () => {
        f.up.next({ reply: CITY_JSON });
        const m = llm('plain');
        const messages: ChatMessage[] = [{ role: 'user', content: 'Paris?' }];
        // OpenAIResponses drops `responseFormat`; the Responses API's own text.format goes through its options.
        const r = await (m instanceof OpenAI
          ? m.chat({ messages, responseFormat: City })
          : m.chat({
              messages,
              additionalChatOptions: { text: { format: { type: 'json_schema', name: 'city', schema: z.toJSONSchema(City), strict: true } } },
            }));
        assert.deepEqual(City.parse(JSON.parse(r.message.content as string)), JSON.parse(CITY_JSON));
        assert.equal(f.lastUpstreamBody().response_format.type, 'json_schema');
      });

      it('a model without tools: tools refused naming the field; a tool history is invalid_message_role', async () => {
        const t = await refused(llm('plain').chat({ messages: [{ role: 'user', content: 'Paris' }], tools: [weather] }));
        assert.equal(t.status, 400);
        assert.equal(t.code, 'invalid_request');
        assert.equal(t.param, 'tools');
        assert.match(t.message, /tool calling is not enabled for model 'plain'/);
        const h = await refused(
          llm('plain').chat({
            messages: [
              { role: 'user', content: 'weather in Paris?' },
              { role: 'assistant', content: '', options: { toolCall: [{ id: 'call_1', name: 'get_weather', input: '{"query":"Paris"}' }] } },
              { role: 'user', content: 'sunny', options: { toolResult: { id: 'call_1', result: 'sunny', isError: false } } },
            ],
          }),
        );
        assert.equal(h.status, 400);
        assert.equal(h.code, 'invalid_message_role');
      });

      it('reasoning-looking ids: whatever role the system prompt goes as, it is a system instruction', async () => {
        for (const id of ['gpt-5-mini', 'o3-mini']) {
          const rec = recordingFetch();
          const r = await llm(id, { additionalSessionOptions: { fetch: rec.fetch } }).chat({
            messages: [
              { role: 'system', content: 'Be brief.' },
              { role: 'user', content: 'hello' },
            ],
          });
          assert.equal(r.message.content, 'You said: hello');
          assert.ok(['system', 'developer'].includes(sentRoles(rec.sent[0]!)[0]!));
          assert.deepEqual(f.lastUpstreamBody().messages[0], { role: 'system', content: 'Be brief.' });
        }
      });

      it("a per-key limit's 429 reaches LlamaIndex with its reason", async () => {
        const m = make('plain', await f.limitedKey(), { baseURL: f.baseURL });
        await m.complete({ prompt: 'hi' });
        const e = await refused(m.complete({ prompt: 'hi' }));
        assert.equal(e.status, 429);
        assert.equal(e.code, 'rate_limit_exceeded');
        assert.match(e.message, /per-minute limit/);
      });
    });
  }
});
