// openai-node, 6.x and 7.x (installed as `openai7`), against the gateway through its higher-level helpers, beside the wire-level
// tests in test/text/chat-openai-wire.test.ts and responses.test.ts: streaming helpers,
// `runTools` (its agent loop) on a tools-enabled model, structured output with zod (`parse`, chat
// and Responses), the refusals on a model without tools as APIError's status, code and param, a
// history kept from OpenAI's answers, and reasoning models.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI6 from 'openai';
import * as zod6 from 'openai/helpers/zod';
import OpenAI7 from 'openai7';
import * as zod7 from 'openai7/helpers/zod';
import { z } from 'zod';
import { CITY_JSON, openaiRefusal as refused, startClientFixture, TOOL_HISTORY, type ClientFixture } from './fixture.ts';

const City = z.object({ city: z.string(), population: z.number() });

/**
 * Each version with its own zod helpers. openai 7 is typed as 6 here: the same calls an application
 * written against 6 makes, run on 7 (its own types are checked where it differs: test/realtime/openai-client.test.ts).
 */
const VERSIONS = [
  ['6', OpenAI6, zod6],
  ['7', OpenAI7 as unknown as typeof OpenAI6, zod7 as unknown as typeof zod6],
] as const;

for (const [version, OpenAI, { zodFunction, zodResponseFormat, zodTextFormat }] of VERSIONS)
  describe(`openai-node ${version}`, () => {
    let f: ClientFixture;
    let ai: OpenAI6;
    before(async () => {
      f = await startClientFixture();
      ai = new OpenAI({ apiKey: f.key, baseURL: f.baseURL, maxRetries: 0 });
    });
    after(() => f.close());

    it('streaming helpers: chat.completions.stream and responses.stream', async () => {
      const chat = ai.chat.completions.stream({
        model: 'plain',
        messages: [{ role: 'user', content: 'tell me about rivers' }],
        stream_options: { include_usage: true },
      });
      const done = await chat.finalChatCompletion();
      assert.equal(done.choices[0]!.message.content, 'You said: tell me about rivers');
      assert.ok(done.usage!.completion_tokens > 0);
      const resp = ai.responses.stream({ model: 'plain', input: 'tell me about rivers' });
      let text = '';
      resp.on('response.output_text.delta', (e) => (text += e.delta));
      const final = await resp.finalResponse();
      assert.equal(text, 'You said: tell me about rivers');
      assert.equal(final.output_text, text);
    });

    for (const id of ['agent', 'claude-agent']) {
      it(`runTools on ${id}: the helper's loop calls the function and answers with its result`, async () => {
        const runner = ai.chat.completions.runTools({
          model: id,
          messages: [{ role: 'user', content: 'Paris' }],
          tools: [zodFunction({ name: 'get_weather', parameters: z.object({ query: z.string() }), function: ({ query }) => `sunny in ${query}` })],
        });
        assert.equal(await runner.finalContent(), 'The tool said: sunny in Paris');
        assert.deepEqual((await runner.finalFunctionToolCall())?.name, 'get_weather');
      });
    }

    it('structured output with zod: chat.completions.parse and responses.parse', async () => {
      f.up.next({ reply: CITY_JSON });
      const c = await ai.chat.completions.parse({
        model: 'plain',
        messages: [{ role: 'user', content: 'Paris?' }],
        response_format: zodResponseFormat(City, 'city'),
      });
      assert.deepEqual(c.choices[0]!.message.parsed, JSON.parse(CITY_JSON));
      f.up.next({ reply: CITY_JSON });
      const r = await ai.responses.parse({ model: 'plain', input: 'Paris?', text: { format: zodTextFormat(City, 'city') } });
      assert.deepEqual(r.output_parsed, JSON.parse(CITY_JSON));
      assert.equal(f.lastUpstreamBody().response_format.json_schema.name, 'city');
    });

    it('a model without tools: tools refused naming the field; a tool history is invalid_message_role', async () => {
      const weather = zodFunction({ name: 'get_weather', parameters: z.object({ query: z.string() }) });
      for (const p of [
        ai.chat.completions.create({ model: 'plain', messages: [{ role: 'user', content: 'Paris' }], tools: [weather] }),
        ai.responses.create({ model: 'plain', input: 'Paris', tools: [{ type: 'function', name: 'get_weather', parameters: {}, strict: false }] }),
      ]) {
        const e = await refused(p);
        assert.deepEqual([e.status, e.code, e.param], [400, 'invalid_request', 'tools']);
        assert.match(e.message, /tool calling is not enabled for model 'plain'/);
      }
      const h = await refused(ai.chat.completions.create({ model: 'plain', messages: TOOL_HISTORY as unknown as OpenAI6.ChatCompletionMessageParam[] }));
      assert.deepEqual([h.status, h.code, h.param], [400, 'invalid_message_role', 'messages.2.role']);
    });

    it("a history kept from OpenAI's answers (refusal: null, annotations) and OpenAI's nullable parameters as null", async () => {
      const kept = { role: 'assistant', content: 'hi there', refusal: null, annotations: [] } as OpenAI6.ChatCompletionAssistantMessageParam;
      const r = await ai.chat.completions.create({
        model: 'plain',
        messages: [{ role: 'user', content: 'hello' }, kept, { role: 'user', content: 'rivers' }],
        stop: null,
        seed: null,
        temperature: null,
        top_p: null,
        n: null,
        max_tokens: null,
        response_format: undefined,
      });
      assert.equal(r.choices[0]!.message.content, 'You said: rivers');
      const seen = f.lastUpstreamBody();
      assert.deepEqual(seen.messages[1], { role: 'assistant', content: 'hi there' });
      for (const k of ['stop', 'seed', 'temperature', 'top_p', 'n']) assert.equal(k in seen, false, k);
    });

    it('developer messages to reasoning models, and max_completion_tokens named when too large', async () => {
      for (const model of ['gpt-5-mini', 'o3-mini']) {
        const r = await ai.chat.completions.create({
          model,
          messages: [
            { role: 'developer', content: 'Be brief.' },
            { role: 'user', content: 'hello' },
          ],
          reasoning_effort: 'low',
        });
        assert.equal(r.choices[0]!.message.content, 'You said: hello');
        assert.deepEqual(f.lastUpstreamBody().messages[0], { role: 'system', content: 'Be brief.' });
        const e = await refused(ai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 100_000 }));
        assert.deepEqual([e.status, e.code, e.param], [400, 'invalid_request', 'max_completion_tokens']);
      }
    });

    it("a per-key limit's 429 reaches openai-node as RateLimitError with its reason, and OpenAI's required param (null)", async () => {
      const limited = new OpenAI({ apiKey: await f.limitedKey(), baseURL: f.baseURL, maxRetries: 0 });
      const ask = { model: 'plain', messages: [{ role: 'user' as const, content: 'hi' }] };
      await limited.chat.completions.create(ask);
      const e = await limited.chat.completions.create(ask).then(
        () => assert.fail('not refused'),
        (err: unknown) => err as InstanceType<typeof OpenAI.APIError>,
      );
      assert.ok(e instanceof OpenAI.RateLimitError, String(e));
      assert.deepEqual([e.status, e.code, e.type], [429, 'rate_limit_exceeded', 'rate_limit_error']);
      assert.match(e.message, /per-minute limit/);
      assert.ok('param' in (e.error as object), 'the envelope carries param');
      assert.equal(e.param, null);
    });

    it("answers carry OpenAI's required nullable fields: choices[].logprobs and message.refusal", async () => {
      const r = await ai.chat.completions.create({ model: 'plain', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(r.choices[0]!.logprobs, null);
      assert.equal(r.choices[0]!.message.refusal, null);
    });
  });
