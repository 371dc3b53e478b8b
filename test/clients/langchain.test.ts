// LangChain's `ChatOpenAI` (@langchain/openai, on openai-node) against the gateway: plain, streaming,
// `bindTools` and an agent turn on a tools-enabled model, `withStructuredOutput` (JSON schema and
// function calling), the Responses API (`useResponsesApi`), and the refusals on a model without
// tools with the spec's code as LangChain surfaces it (the OpenAI error it rethrows).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChatOpenAI } from '@langchain/openai';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { CITY_JSON, openaiRefusal, recordingFetch, sentRoles, startClientFixture, type ClientFixture } from './fixture.ts';

const weather = tool(async ({ query }: { query: string }) => `sunny in ${query}`, {
  name: 'get_weather',
  description: 'The weather in a city',
  schema: z.object({ query: z.string() }),
});
const City = z.object({ city: z.string(), population: z.number() });

// LangChain and LlamaIndex rethrow openai-node's APIError as it is.
const refused = openaiRefusal;

describe("LangChain's ChatOpenAI", () => {
  let f: ClientFixture;
  const chat = (model: string, over: Record<string, unknown> = {}) =>
    new ChatOpenAI({ model, apiKey: f.key, configuration: { baseURL: f.baseURL }, maxRetries: 0, ...over });

  before(async () => {
    f = await startClientFixture();
  });
  after(() => f.close());

  for (const useResponsesApi of [false, true]) {
    describe(useResponsesApi ? 'Responses API (useResponsesApi: true)' : 'chat completions', () => {
      it('plain: the answer and its usage', async () => {
        const r = await chat('plain', { useResponsesApi }).invoke([new SystemMessage('Be brief.'), new HumanMessage('tell me about rivers')]);
        assert.equal(r.text, 'You said: tell me about rivers');
        assert.ok(r.usage_metadata!.input_tokens > 0 && r.usage_metadata!.output_tokens > 0);
        assert.deepEqual(f.lastUpstreamBody().messages[0], { role: 'system', content: 'Be brief.' });
      });

      it('streaming: the chunks add up', async () => {
        let text = '';
        let chunks = 0;
        for await (const c of await chat('plain', { useResponsesApi, streamUsage: true }).stream('tell me about rivers')) {
          text += c.text;
          chunks++;
        }
        assert.equal(text, 'You said: tell me about rivers');
        assert.ok(chunks > 1);
      });

      for (const id of ['agent', 'claude-agent']) {
        it(`bindTools on ${id}: a tool call, its ToolMessage, the answer; streamed tool-call chunks`, async () => {
          const model = chat(id, { useResponsesApi }).bindTools([weather]);
          const first = await model.invoke([new HumanMessage('Paris')]);
          assert.deepEqual(
            first.tool_calls!.map((c) => [c.name, c.args]),
            [['get_weather', { query: 'Paris' }]],
          );
          const result = await weather.invoke(first.tool_calls![0]!);
          const second = await model.invoke([new HumanMessage('Paris'), first, result]);
          assert.equal(second.text, 'The tool said: sunny in Paris');

          let gathered: any;
          for await (const c of await chat(id, { useResponsesApi })
            .bindTools([weather], { tool_choice: 'get_weather' })
            .stream([new HumanMessage('Paris')])) {
            gathered = gathered === undefined ? c : gathered.concat(c);
          }
          assert.deepEqual(
            gathered.tool_calls.map((c: any) => [c.name, c.args]),
            [['get_weather', { query: 'Paris' }]],
          );
        });
      }

      it('withStructuredOutput: JSON schema on any model, function calling on a tools-enabled one', async () => {
        f.up.next({ reply: CITY_JSON });
        const bySchema = await chat('plain', { useResponsesApi }).withStructuredOutput(City, { method: 'jsonSchema' }).invoke('Paris?');
        assert.deepEqual(bySchema, JSON.parse(CITY_JSON));
        assert.equal(f.lastUpstreamBody().response_format.type, 'json_schema');
        const byTool = await chat('agent', { useResponsesApi })
          .withStructuredOutput(z.object({ query: z.string() }), { method: 'functionCalling', name: 'get_weather' })
          .invoke('Paris');
        assert.deepEqual(byTool, { query: 'Paris' });
      });

      it('a model without tools: bindTools refused naming tools; a tool history is invalid_message_role', async () => {
        const t = await refused(chat('plain', { useResponsesApi }).bindTools([weather]).invoke('Paris'));
        assert.equal(t.status, 400);
        assert.equal(t.code, 'invalid_request');
        assert.equal(t.param, 'tools');
        assert.match(t.message, /tool calling is not enabled for model 'plain'/);
        const history = [
          new HumanMessage('weather in Paris?'),
          new AIMessage({ content: '', tool_calls: [{ id: 'call_1', name: 'get_weather', args: { query: 'Paris' } }] }),
          new ToolMessage({ tool_call_id: 'call_1', content: 'sunny' }),
        ];
        const h = await refused(chat('plain', { useResponsesApi }).invoke(history));
        assert.equal(h.status, 400);
        assert.equal(h.code, 'invalid_message_role');
        assert.match(h.message, /tool calling is not enabled/);
      });

      it('reasoning-looking ids (gpt-5*, o3*): the developer message is a system instruction', async () => {
        for (const id of ['gpt-5-mini', 'o3-mini']) {
          const rec = recordingFetch();
          const r = await chat(id, { useResponsesApi, configuration: { baseURL: f.baseURL, fetch: rec.fetch } }).invoke([
            new SystemMessage('Be brief.'),
            new HumanMessage('hello'),
          ]);
          assert.deepEqual(sentRoles(rec.sent[0]!), ['developer', 'user']);
          assert.equal(r.text, 'You said: hello');
          assert.deepEqual(f.lastUpstreamBody().messages[0], { role: 'system', content: 'Be brief.' });
        }
      });

      it('an output cap above the model maximum is refused naming the field LangChain sent', async () => {
        const e = await refused(chat('plain', { useResponsesApi, maxTokens: 100_000 }).invoke('hi'));
        assert.equal(e.status, 400);
        assert.equal(e.code, 'invalid_request');
        assert.equal(e.param, useResponsesApi ? 'max_output_tokens' : 'max_tokens');
        const r = await refused(chat('o3-mini', { useResponsesApi, maxTokens: 100_000 }).invoke('hi'));
        assert.equal(r.param, useResponsesApi ? 'max_output_tokens' : 'max_completion_tokens');
      });
    });
  }

  it("a per-key limit's 429 reaches LangChain with its reason", async () => {
    const limited = new ChatOpenAI({ model: 'plain', apiKey: await f.limitedKey(), configuration: { baseURL: f.baseURL }, maxRetries: 0 });
    await limited.invoke('hi');
    const e = await refused(limited.invoke('hi'));
    assert.equal(e.status, 429);
    assert.equal(e.code, 'rate_limit_exceeded');
    assert.match(e.message, /per-minute limit/);
  });
});
