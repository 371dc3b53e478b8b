// The OpenAI-compatible provider against the fake upstream: what it sends, what it makes of the
// answers (JSON and SSE), and what it refuses (malformed frames, absurd usage, cut-off streams).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { UpstreamHttp } from '../../src/providers/http.ts';
import { createOpenAIProvider } from '../../src/providers/openai/index.ts';
import { chatBody, logprobsOf } from '../../src/providers/openai/chat.ts';
import { UpstreamError, type ChatCapability, type EmbeddingsCapability } from '../../src/providers/types.ts';
import { fakeEmbedding, startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { drain, never, routeTo, text, USER } from './helpers.ts';

const KEY = 'sk-up-0123456789';

describe('OpenAI-compatible provider', () => {
  let up: FakeServer;
  let http: UpstreamHttp;
  let chat: ChatCapability;
  let embeddings: EmbeddingsCapability;
  before(async () => {
    up = await startOpenAIUpstream({ apiKey: KEY, models: ['up-model'] });
    http = new UpstreamHttp({ maxResponseBytes: 100_000 });
    const p = createOpenAIProvider(http);
    chat = p.chat!;
    embeddings = p.embeddings!;
  });
  after(async () => {
    await http.close();
    await up.close();
  });

  const route = () => routeTo(up, { apiKey: KEY });

  describe('chat', () => {
    it('sends the upstream model, key and known fields only, and reads the answer', async () => {
      const result = await chat.complete(
        route(),
        { messages: [{ role: 'system', content: 'be brief' }, USER('hello there')], temperature: 0.5, top_p: 0.9, max_tokens: 50, stop: ['zzz'] },
        never,
      );
      const rec = up.requests.at(-1)!;
      assert.equal(rec.path, '/v1/chat/completions');
      assert.equal(rec.headers.authorization, `Bearer ${KEY}`);
      assert.deepEqual(rec.body, {
        model: 'up-model',
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'hello there' },
        ],
        temperature: 0.5,
        top_p: 0.9,
        max_tokens: 50,
        stop: ['zzz'],
      });
      assert.deepEqual(result, {
        choices: [{ index: 0, message: { role: 'assistant', content: 'You said: hello there' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 4, completion_tokens: 4 },
      });
    });

    it('names the output limit max_completion_tokens for OpenAI itself, max_tokens for compatible servers', () => {
      const openai = chatBody(routeTo('https://api.openai.com', { baseUrl: 'https://api.openai.com/v1' }), { messages: [USER('x')], max_tokens: 9 }, false);
      assert.equal(openai.max_completion_tokens, 9);
      assert.equal(openai.max_tokens, undefined);
      const vllm = chatBody(routeTo('http://10.0.0.2:8000'), { messages: [USER('x')], max_tokens: 9 }, false);
      assert.equal(vllm.max_tokens, 9);
      assert.equal(vllm.max_completion_tokens, undefined);
    });

    it("passes OpenAI's sampling and format parameters as given, and only those given", () => {
      const format = { type: 'json_schema', json_schema: { name: 'reply', schema: { type: 'object' }, strict: true } } as const;
      const body = chatBody(
        routeTo('http://10.0.0.2:8000'),
        { messages: [USER('x')], seed: 42, presence_penalty: -1.5, frequency_penalty: 2, response_format: format },
        false,
      );
      assert.equal(body.seed, 42);
      assert.equal(body.presence_penalty, -1.5);
      assert.equal(body.frequency_penalty, 2);
      assert.deepEqual(body.response_format, format);
      const plain = chatBody(routeTo('http://10.0.0.2:8000'), { messages: [USER('x')] }, false);
      assert.deepEqual(Object.keys(plain).sort(), ['messages', 'model']);
      const more = {
        reasoning_effort: 'xhigh',
        verbosity: 'low',
        logit_bias: { '42': -100 },
        safety_identifier: 'sid',
        user: 'uid',
        prompt_cache_key: 'pck',
      } as const;
      const withMore = chatBody(routeTo('http://10.0.0.2:8000'), { messages: [USER('x')], ...more }, false);
      for (const [k, v] of Object.entries(more)) assert.deepEqual(withMore[k], v, k);
    });

    it('sends no authorization header for a route without a key (local servers)', async () => {
      const open = await startOpenAIUpstream();
      try {
        await chat.complete(routeTo(open, { apiKey: '' }), { messages: [USER('hi')] }, never);
        assert.equal(open.requests[0]!.headers.authorization, undefined);
      } finally {
        await open.close();
      }
    });

    it('passes n through and returns every choice', async () => {
      const result = await chat.complete(route(), { messages: [USER('a b')], n: 2 }, never);
      assert.deepEqual(
        result.choices.map((c) => c.index),
        [0, 1],
      );
    });

    it('reports finish_reason length when max_tokens cut the answer', async () => {
      const result = await chat.complete(route(), { messages: [USER('one two three four')], max_tokens: 2 }, never);
      assert.equal(result.choices[0]!.message.content, 'You said:');
      assert.equal(result.choices[0]!.finish_reason, 'length');
    });

    it('reads the reasoning and cached tokens of usage, when plausible', async () => {
      const read = async (usage: unknown) => {
        up.next({ usage });
        return (await chat.complete(route(), { messages: [USER('hi')] }, never)).usage;
      };
      assert.deepEqual(await read({ prompt_tokens: 2, completion_tokens: 30, completion_tokens_details: { reasoning_tokens: 26 } }), {
        prompt_tokens: 2,
        completion_tokens: 30,
        reasoning_tokens: 26,
      });
      assert.deepEqual(await read({ prompt_tokens: 90, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 64, audio_tokens: 0 } }), {
        prompt_tokens: 90,
        completion_tokens: 3,
        cached_tokens: 64,
      });
      assert.deepEqual(
        await read({ prompt_tokens: 90, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 91 } }),
        { prompt_tokens: 90, completion_tokens: 3 },
        'more cached than prompt: ignored',
      );
      for (const details of [{ reasoning_tokens: 31 }, { reasoning_tokens: -1 }, { reasoning_tokens: '3' }, {}, null, 'x']) {
        assert.deepEqual(
          await read({ prompt_tokens: 2, completion_tokens: 30, completion_tokens_details: details }),
          { prompt_tokens: 2, completion_tokens: 30 },
          JSON.stringify(details),
        );
      }
    });

    it('passes logprobs on rebuilt from their documented fields, and refuses malformed ones', () => {
      const entry = { token: 'hi', logprob: -0.5, bytes: [104, 105], top_logprobs: [{ token: 'hi', logprob: -0.5, bytes: null, extra: 1 }], extra: 'x' };
      assert.deepEqual(logprobsOf('r#0', { content: [entry], refusal: null, other: 1 }), {
        content: [{ token: 'hi', logprob: -0.5, bytes: [104, 105], top_logprobs: [{ token: 'hi', logprob: -0.5, bytes: null }] }],
        refusal: null,
      });
      assert.equal(logprobsOf('r#0', null), null);
      assert.equal(logprobsOf('r#0', undefined), null);
      assert.deepEqual(logprobsOf('r#0', { content: null }), { content: null, refusal: null });
      for (const bad of [
        { content: 'x' },
        'x',
        { content: [{ ...entry, logprob: 0.5 }] },
        { content: [{ ...entry, logprob: Infinity }] },
        { content: [{ ...entry, bytes: [256] }] },
        { content: [{ ...entry, token: 3 }] },
        { content: [{ ...entry, top_logprobs: Array.from({ length: 21 }, () => entry.top_logprobs[0]) }] },
        { content: [{ ...entry, top_logprobs: [{ token: 'x' }] }] },
      ]) {
        assert.throws(
          () => logprobsOf('r#0', bad),
          (e: unknown) => e instanceof UpstreamError && e.kind === 'protocol',
          JSON.stringify(bad),
        );
      }
    });

    it('treats absurd usage as none', async () => {
      for (const usage of [
        { prompt_tokens: -1, completion_tokens: 3 },
        { prompt_tokens: 1.5, completion_tokens: 3 },
        { prompt_tokens: 2, completion_tokens: 1e300 },
        { prompt_tokens: '2', completion_tokens: 3 },
        { prompt_tokens: 2 },
        'lots',
      ]) {
        up.next({ usage });
        const result = await chat.complete(route(), { messages: [USER('hi')] }, never);
        assert.equal(result.usage, null, JSON.stringify(usage));
        assert.equal(result.choices[0]!.message.content, 'You said: hi');
      }
    });

    it('classifies a wrong key and an unknown model as misconfiguration', async () => {
      for (const r of [routeTo(up, { apiKey: 'sk-wrong-key' }), routeTo(up, { apiKey: KEY, upstreamModel: 'nope' })]) {
        await assert.rejects(chat.complete(r, { messages: [USER('hi')] }, never), (e: unknown) => e instanceof UpstreamError && e.kind === 'config');
      }
    });

    it('refuses a malformed answer', async () => {
      for (const rawBody of ['{"choices": []}', '{"choices": [{"message": {"content": 7}}]}', '[]']) {
        up.next({ rawBody });
        await assert.rejects(
          chat.complete(route(), { messages: [USER('hi')] }, never),
          (e: unknown) => e instanceof UpstreamError && e.kind === 'protocol',
          rawBody,
        );
      }
    });
  });

  describe('chat streams', () => {
    it('asks for usage and yields the role, the words, the finish reason and the usage', async () => {
      const stream = await chat.stream(route(), { messages: [USER('hello there')] }, never);
      const { chunks, error } = await drain(stream);
      assert.equal(error, null);
      const rec = up.requests.at(-1)!;
      assert.equal(rec.body.stream, true);
      assert.deepEqual(rec.body.stream_options, { include_usage: true });
      assert.deepEqual(chunks[0], { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] });
      assert.equal(text(chunks), 'You said: hello there');
      assert.deepEqual(chunks.at(-2), { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
      assert.deepEqual(chunks.at(-1), { choices: [], usage: { prompt_tokens: 2, completion_tokens: 4 } });
    });

    it('drops absurd stream usage', async () => {
      up.next({ usage: { prompt_tokens: 2, completion_tokens: -4 } });
      const { chunks, error } = await drain(await chat.stream(route(), { messages: [USER('hi')] }, never));
      assert.equal(error, null);
      assert.ok(chunks.every((c) => c.usage === undefined));
      assert.equal(text(chunks), 'You said: hi');
    });

    it('accepts a stream that ends after its finish reason without [DONE]', async () => {
      // role, 2 words, finish, usage, [DONE]: end before [DONE].
      up.next({ endAfterChunks: 5 });
      const { chunks, error } = await drain(await chat.stream(route(), { messages: [USER('hi')] }, never));
      assert.equal(error, null);
      assert.equal(text(chunks), 'You said: hi');
    });

    it('throws protocol after the delivered chunks when the stream ends before finishing', async () => {
      up.next({ endAfterChunks: 2 });
      const { chunks, error } = await drain(await chat.stream(route(), { messages: [USER('hi')] }, never));
      assert.equal(text(chunks), 'You');
      assert.ok(error instanceof UpstreamError && error.kind === 'protocol');
    });

    it('throws protocol on a malformed frame, after the chunks before it', async () => {
      up.next({ malformedAfterChunks: 3 });
      const { chunks, error } = await drain(await chat.stream(route(), { messages: [USER('hi')] }, never));
      assert.equal(text(chunks), 'You said:');
      assert.ok(error instanceof UpstreamError && error.kind === 'protocol');
    });

    it('throws a retryable failure on an error frame inside the stream', async () => {
      up.next({ errorAfterChunks: 2 });
      const { chunks, error } = await drain(await chat.stream(route(), { messages: [USER('hi')] }, never));
      assert.equal(chunks.length, 2);
      assert.ok(error instanceof UpstreamError && error.kind === 'http' && error.retryable);
    });

    it('fails opening on an error status', async () => {
      up.next({ status: 503 });
      await assert.rejects(chat.stream(route(), { messages: [USER('hi')] }, never), (e: unknown) => e instanceof UpstreamError && e.status === 503);
    });
  });

  describe('embeddings', () => {
    it('embeds a string as floats', async () => {
      const result = await embeddings.embed(route(), { input: 'hello world' }, never);
      assert.deepEqual(up.requests.at(-1)!.body, { model: 'up-model', input: 'hello world' });
      assert.deepEqual(result, { data: [{ index: 0, embedding: fakeEmbedding('hello world', 8) }], usage: { prompt_tokens: 2 } });
    });

    it('embeds a list with dimensions and base64, passing both upstream', async () => {
      const result = await embeddings.embed(route(), { input: ['a', 'b c'], encoding_format: 'base64', dimensions: 4 }, never);
      assert.deepEqual(up.requests.at(-1)!.body, { model: 'up-model', input: ['a', 'b c'], encoding_format: 'base64', dimensions: 4 });
      assert.equal(result.data.length, 2);
      const decoded = new Float32Array(Uint8Array.from(Buffer.from(result.data[1]!.embedding as string, 'base64')).buffer);
      assert.deepEqual([...decoded], [...new Float32Array(fakeEmbedding('b c', 4))]);
      assert.deepEqual(result.usage, { prompt_tokens: 3 });
    });

    it('answers in the encoding asked for when the upstream ignored it', async () => {
      up.next({ rawBody: JSON.stringify({ data: [{ index: 0, embedding: [0.5, -1] }], usage: { prompt_tokens: 1 } }) });
      const b64 = await embeddings.embed(route(), { input: 'x', encoding_format: 'base64' }, never);
      assert.equal(b64.data[0]!.embedding, Buffer.from(new Float32Array([0.5, -1]).buffer).toString('base64'));
      up.next({ rawBody: JSON.stringify({ data: [{ index: 0, embedding: b64.data[0]!.embedding }], usage: { prompt_tokens: 1 } }) });
      const floats = await embeddings.embed(route(), { input: 'x' }, never);
      assert.deepEqual(floats.data[0]!.embedding, [0.5, -1]);
    });

    it('refuses answers with the wrong count, bad numbers or bad indexes, and drops absurd usage', async () => {
      for (const data of [
        [],
        [
          { index: 0, embedding: [1] },
          { index: 1, embedding: [2] },
        ],
        [{ index: 0, embedding: [null] }],
        [{ index: 3, embedding: [1] }],
      ]) {
        up.next({ rawBody: JSON.stringify({ data }) });
        await assert.rejects(embeddings.embed(route(), { input: 'x' }, never), (e: unknown) => e instanceof UpstreamError && e.kind === 'protocol');
      }
      up.next({ usage: { prompt_tokens: -3 } });
      assert.equal((await embeddings.embed(route(), { input: 'x' }, never)).usage, null);
    });

    it('refuses an answer over the size limit', async () => {
      up.next({ padBytes: 200_000 });
      await assert.rejects(embeddings.embed(route(), { input: 'x' }, never), (e: unknown) => e instanceof UpstreamError && e.kind === 'protocol');
    });
  });
});
