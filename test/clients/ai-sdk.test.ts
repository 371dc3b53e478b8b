// The Vercel AI SDK (`ai` 6) against the gateway: `@ai-sdk/openai`'s default provider
// (`createOpenAI({baseURL})(model)`, the Responses API) and `.chat(model)` (chat completions), and
// `@ai-sdk/openai-compatible` (chat completions), each
// plain, streaming, with tools on a tools-enabled model, with structured output, and refused on a
// model without tools with the spec's code as the SDK surfaces it (APICallError's status and data).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { APICallError, generateObject, generateText, Output, stepCountIs, streamText, tool, type LanguageModel, type ModelMessage } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { z } from 'zod';
import { CITY_JSON, recordingFetch, sentRoles, startClientFixture, type ClientFixture, type Refusal } from './fixture.ts';

const weather = tool({
  description: 'The weather in a city',
  inputSchema: z.object({ query: z.string() }),
  execute: async ({ query }) => `sunny in ${query}`,
});
const City = z.object({ city: z.string(), population: z.number() });

/** The SDK's error for a refused call: status, and the gateway's envelope as the SDK parsed it. */
async function refused(p: Promise<unknown>): Promise<Refusal> {
  try {
    await p;
  } catch (e) {
    assert.ok(APICallError.isInstance(e), String(e));
    const body = JSON.parse(e.responseBody ?? '{}');
    return { status: e.statusCode!, code: body.error?.code, param: body.error?.param ?? null, message: e.message };
  }
  assert.fail('the call was not refused');
}

type Provider = (baseURL: string, apiKey: string, fetch?: typeof globalThis.fetch) => (id: string) => LanguageModel;
// Whether the provider sends `developer` for a reasoning-looking model id.
const PROVIDERS: [string, Provider, boolean][] = [
  ['@ai-sdk/openai default provider (Responses API)', (baseURL, apiKey, fetch) => createOpenAI({ baseURL, apiKey, fetch }), true],
  ['@ai-sdk/openai .chat() (chat completions)', (baseURL, apiKey, fetch) => createOpenAI({ baseURL, apiKey, fetch }).chat, true],
  [
    '@ai-sdk/openai-compatible',
    (baseURL, apiKey, fetch) => createOpenAICompatible({ name: 'gateway', baseURL, apiKey, fetch, includeUsage: true, supportsStructuredOutputs: true }),
    false,
  ],
];

describe('AI SDK (ai)', () => {
  let f: ClientFixture;
  before(async () => {
    f = await startClientFixture();
  });
  after(() => f.close());

  it('the default provider in a conversation: its item references refused as such; with store: false it sends the items', async () => {
    const model = createOpenAI({ baseURL: f.baseURL, apiKey: f.key })('claude-agent');
    const first = await generateText({ model, prompt: 'hello', maxRetries: 0 });
    const messages: ModelMessage[] = [{ role: 'user', content: 'hello' }, ...first.response.messages, { role: 'user', content: 'rivers' }];
    const e = await refused(generateText({ model, messages, maxRetries: 0 }));
    assert.deepEqual([e.status, e.code, e.param], [400, 'invalid_request', 'input.1.type']);
    assert.match(e.message, /store: false/);
    const r = await generateText({ model, messages, providerOptions: { openai: { store: false } }, maxRetries: 0 });
    assert.equal(r.text, 'You said: rivers');
    assert.deepEqual(
      f.anthropic
        .calls('/v1/messages')
        .at(-1)!
        .body.messages.map((m: any) => m.role),
      ['user', 'assistant', 'user'],
    );
  });

  for (const [name, provider, sendsDeveloper] of PROVIDERS) {
    describe(name, () => {
      const model = (id: string) => provider(f.baseURL, f.key)(id);
      it('plain: text, usage and the system prompt', async () => {
        const r = await generateText({ model: model('plain'), system: 'Be brief.', prompt: 'tell me about rivers', maxRetries: 0 });
        assert.equal(r.text, 'You said: tell me about rivers');
        assert.ok(r.usage.inputTokens! > 0 && r.usage.outputTokens! > 0);
        assert.equal(r.finishReason, 'stop');
        assert.deepEqual(f.lastUpstreamBody().messages, [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'tell me about rivers' },
        ]);
      });

      it('streaming: the deltas add up, usage at the end', async () => {
        const r = streamText({ model: model('plain'), prompt: 'tell me about rivers', maxRetries: 0 });
        let text = '';
        let pieces = 0;
        for await (const d of r.textStream) {
          text += d;
          pieces++;
        }
        assert.equal(text, 'You said: tell me about rivers');
        assert.ok(pieces > 1, 'streamed in pieces');
        assert.ok((await r.usage).outputTokens! > 0);
        assert.equal(await r.finishReason, 'stop');
      });

      for (const id of ['agent', 'claude-agent']) {
        it(`tools on ${id}: the SDK's agent loop calls the tool and answers with its result; streamed too`, async () => {
          const r = await generateText({ model: model(id), tools: { get_weather: weather }, stopWhen: stepCountIs(3), prompt: 'Paris', maxRetries: 0 });
          assert.equal(r.steps.length, 2);
          assert.deepEqual(
            r.steps[0]!.toolCalls.map((c) => [c.toolName, c.input]),
            [['get_weather', { query: 'Paris' }]],
          );
          assert.equal(r.text, 'The tool said: sunny in Paris');

          const s = streamText({
            model: model(id),
            tools: { get_weather: weather },
            toolChoice: { type: 'tool', toolName: 'get_weather' },
            prompt: 'Paris',
            maxRetries: 0,
          });
          const calls = [];
          for await (const part of s.fullStream) if (part.type === 'tool-call') calls.push([part.toolName, part.input]);
          assert.deepEqual(calls, [['get_weather', { query: 'Paris' }]]);
          assert.equal(await s.finishReason, 'tool-calls');
        });
      }

      it('structured output: a JSON schema sent, the object parsed', async () => {
        f.up.next({ reply: CITY_JSON });
        const r = await generateText({ model: model('plain'), output: Output.object({ schema: City }), prompt: 'Paris?', maxRetries: 0 });
        assert.deepEqual(r.output, JSON.parse(CITY_JSON));
        const rf = f.lastUpstreamBody().response_format;
        assert.equal(rf.type, 'json_schema');
        assert.deepEqual(Object.keys(rf.json_schema.schema.properties), ['city', 'population']);
        f.up.next({ reply: CITY_JSON });
        const o = await generateObject({ model: model('plain'), schema: City, prompt: 'Paris?', maxRetries: 0 });
        assert.deepEqual(o.object, JSON.parse(CITY_JSON));
      });

      it('a model without tools: tools refused naming the field; a tool history is invalid_message_role', async () => {
        const t = await refused(generateText({ model: model('plain'), tools: { get_weather: weather }, prompt: 'Paris', maxRetries: 0 }));
        assert.equal(t.status, 400);
        assert.equal(t.code, 'invalid_request');
        assert.equal(t.param, 'tools');
        assert.match(t.message, /tool calling is not enabled for model 'plain'/);
        const history: ModelMessage[] = [
          { role: 'user', content: 'weather in Paris?' },
          { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'get_weather', input: { query: 'Paris' } }] },
          { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_1', toolName: 'get_weather', output: { type: 'text', value: 'sunny' } }] },
        ];
        const h = await refused(generateText({ model: model('plain'), messages: history, maxRetries: 0 }));
        assert.equal(h.status, 400);
        assert.equal(h.code, 'invalid_message_role');
        assert.match(h.message, /tool calling is not enabled/);
      });

      it(`a reasoning-looking id (gpt-5*, o3*)${sendsDeveloper ? ' sends its system prompt as developer:' : ':'} taken as system`, async () => {
        for (const id of ['gpt-5-mini', 'o3-mini']) {
          const rec = recordingFetch();
          // store: false, as a stateless gateway asks: the Responses provider then includes encrypted reasoning.
          const r = await generateText({
            model: provider(f.baseURL, f.key, rec.fetch)(id),
            system: 'Be brief.',
            prompt: 'hello',
            providerOptions: { openai: { store: false } },
            maxRetries: 0,
          });
          assert.deepEqual(sentRoles(rec.sent[0]!), [sendsDeveloper ? 'developer' : 'system', 'user']);
          assert.equal(r.text, 'You said: hello');
          assert.deepEqual(f.lastUpstreamBody().messages[0], { role: 'system', content: 'Be brief.' });
        }
      });

      it('max_tokens above the model maximum is refused naming the field the SDK sent', async () => {
        const e = await refused(generateText({ model: model('plain'), prompt: 'hi', maxOutputTokens: 100_000, maxRetries: 0 }));
        assert.equal(e.status, 400);
        assert.equal(e.code, 'invalid_request');
        assert.match(e.param!, /max_tokens|max_completion_tokens|max_output_tokens/);
      });

      it("a per-key limit's 429 carries its reason to the SDK", async () => {
        const m = provider(f.baseURL, await f.limitedKey())('plain');
        await generateText({ model: m, prompt: 'hi', maxRetries: 0 });
        const e = await refused(generateText({ model: m, prompt: 'hi', maxRetries: 0 }));
        assert.equal(e.status, 429);
        assert.match(e.message, /per-minute limit/);
      });
    });
  }
});
