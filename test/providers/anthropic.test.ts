// The Anthropic provider: translation both ways (requests, answers, stream events) as pure
// functions, then against the fake Messages API, which refuses what the real one refuses.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { UpstreamHttp } from '../../src/providers/http.ts';
import type { SseMessage } from '../../src/providers/sse.ts';
import { createAnthropicProvider } from '../../src/providers/anthropic/index.ts';
import { anthropicChunks, anthropicRefuses, fromAnthropic, THINKING_BUDGET, toAnthropic } from '../../src/providers/anthropic/chat.ts';
import { UpstreamError, type ChatCapability, type ChatRequest } from '../../src/providers/types.ts';
import { invalidMessagesBody, startAnthropicUpstream, type FakeServer } from '../fakes/anthropic-upstream.ts';
import { collect, drain, never, routeTo, text, USER } from './helpers.ts';

const ROUTE = routeTo('http://unused', { provider: 'anthropic' });
const isClientError = (e: unknown) => e instanceof UpstreamError && e.kind === 'client' && e.status === 400;

describe('Anthropic request translation', () => {
  it('moves system messages to `system`, merges consecutive turns, and defaults max_tokens', () => {
    const req: ChatRequest = {
      messages: [
        { role: 'system', content: 'Be brief.' },
        USER('first'),
        USER('second'),
        { role: 'assistant', content: 'ok' },
        { role: 'system', content: 'Be kind.' },
        USER('third'),
      ],
    };
    const body = toAnthropic(ROUTE, req, false);
    assert.deepEqual(body, {
      model: 'up-model',
      max_tokens: 4096,
      system: 'Be brief.\n\nBe kind.',
      messages: [
        { role: 'user', content: 'first\n\nsecond' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'third' },
      ],
    });
    assert.equal(invalidMessagesBody(body), null);
  });

  it('maps max_tokens, stop, temperature (clamped to 0..1), top_p and stream', () => {
    const body = toAnthropic(ROUTE, { messages: [USER('x')], max_tokens: 77, stop: ['END', 'STOP'], temperature: 1.7, top_p: 0.5 }, true, 1000);
    assert.deepEqual(body, {
      model: 'up-model',
      max_tokens: 77,
      messages: [{ role: 'user', content: 'x' }],
      temperature: 1,
      top_p: 0.5,
      stop_sequences: ['END', 'STOP'],
      stream: true,
    });
    assert.equal(toAnthropic(ROUTE, { messages: [USER('x')] }, false, 1000).max_tokens, 1000);
    assert.equal(toAnthropic(ROUTE, { messages: [USER('x')], stop: [] }, false).stop_sequences, undefined);
  });

  it('trims trailing whitespace from a final assistant (prefill) turn', () => {
    const body = toAnthropic(ROUTE, { messages: [USER('x'), { role: 'assistant', content: 'The answer is ' }] }, false);
    assert.deepEqual((body.messages as unknown[])[1], { role: 'assistant', content: 'The answer is' });
  });

  it('refuses as the client error what Anthropic cannot do', () => {
    assert.throws(() => toAnthropic(ROUTE, { messages: [USER('x')], n: 2 }, false), isClientError);
    assert.throws(() => toAnthropic(ROUTE, { messages: [{ role: 'system', content: 's' }] }, false), isClientError);
    assert.throws(() => toAnthropic(ROUTE, { messages: [{ role: 'assistant', content: 'hi' }, USER('x')] }, false), isClientError);
    assert.doesNotThrow(() => toAnthropic(ROUTE, { messages: [USER('x')], n: 1 }, false));
  });

  it('names the first parameter it cannot honour, so the router can pass the route over', () => {
    const refused = (over: Partial<ChatRequest>) => anthropicRefuses({ messages: [USER('x')], ...over })?.param;
    assert.equal(refused({}), undefined);
    assert.equal(refused({ n: 2 }), 'n');
    assert.equal(refused({ seed: 1 }), 'seed');
    assert.equal(refused({ presence_penalty: 0.5 }), 'presence_penalty');
    assert.equal(refused({ frequency_penalty: 0 }), 'frequency_penalty');
    assert.equal(refused({ response_format: { type: 'json_object' } }), 'response_format');
    assert.equal(refused({ response_format: { type: 'json_schema', json_schema: { name: 'a' } } }), 'response_format');
    assert.equal(refused({ response_format: { type: 'text' } }), undefined, 'plain text is what it does anyway');
    assert.equal(refused({ messages: [{ role: 'assistant', content: 'hi' }, USER('x')] }), 'messages');
    assert.equal(refused({ messages: [{ role: 'system', content: 's' }] }), 'messages');
    assert.equal(refused({ messages: [{ role: 'system', content: 's' }, USER('x')], temperature: 1.5, top_p: 0.9, stop: ['z'] }), undefined);
    assert.equal(
      createAnthropicProvider(new UpstreamHttp()).chat!.refuses!({ messages: [USER('x')], seed: 1 })?.param,
      'seed',
      'the provider refuses through it',
    );
    assert.throws(() => toAnthropic(ROUTE, { messages: [USER('x')], seed: 1 }, false), isClientError);
  });
});

describe('Anthropic extended thinking and end-user metadata', () => {
  const ask = (over: Partial<ChatRequest>) => toAnthropic(ROUTE, { messages: [USER('x')], max_tokens: 20_000, ...over }, false);

  it('maps reasoning_effort to a thinking budget kept under max_tokens; none means no thinking', () => {
    for (const [effort, budget] of Object.entries(THINKING_BUDGET)) {
      const body = ask({ reasoning_effort: effort as ChatRequest['reasoning_effort'] });
      assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: budget === 32768 ? 19_999 : budget }, effort);
      assert.equal(invalidMessagesBody(body), null, `the fake (the real API's rules) accepts ${effort}`);
    }
    assert.equal(ask({ reasoning_effort: 'none' }).thinking, undefined);
    assert.equal(ask({}).thinking, undefined);
    assert.deepEqual(ask({ reasoning_effort: 'high', max_tokens: 2000 }).thinking, { type: 'enabled', budget_tokens: 1999 });
    assert.equal(
      invalidMessagesBody(ask({ reasoning_effort: 'high', max_tokens: 2000, temperature: 1.5, top_p: 0.99 })),
      null,
      'temperature clamps to 1, which thinking allows',
    );
  });

  it('refuses, by name, what Anthropic refuses beside thinking, and the parameters it has no equivalent for', () => {
    const refused = (over: Partial<ChatRequest>) => anthropicRefuses({ messages: [USER('x')], max_tokens: 4096, reasoning_effort: 'low', ...over })?.param;
    assert.equal(refused({}), undefined);
    assert.equal(refused({ max_tokens: 1024 }), 'reasoning_effort', 'no budget of 1,024 fits under it');
    assert.equal(refused({ max_tokens: 1025 }), undefined);
    assert.equal(refused({ temperature: 0.7 }), 'temperature');
    assert.equal(refused({ temperature: 1 }), undefined);
    assert.equal(refused({ top_p: 0.9 }), 'top_p');
    assert.equal(refused({ top_p: 0.95 }), undefined);
    assert.equal(refused({ messages: [USER('x'), { role: 'assistant', content: 'Sure:' }] }), 'messages', 'no prefill with thinking');
    assert.equal(refused({ reasoning_effort: 'none', temperature: 0.2, max_tokens: 10 }), undefined, 'none asks for no thinking');
    assert.equal(refused({ logit_bias: { '1': 2 } }), 'logit_bias');
    assert.equal(refused({ verbosity: 'low' }), 'verbosity');
    // Each refusal is what the real API would have answered 400 to.
    for (const over of [{ temperature: 0.7 }, { top_p: 0.9 }, { messages: [USER('x'), { role: 'assistant' as const, content: 'Sure:' }] }]) {
      const body = toAnthropic(ROUTE, { messages: [USER('x')], max_tokens: 4096, ...over }, false);
      assert.notEqual(invalidMessagesBody({ ...body, thinking: { type: 'enabled', budget_tokens: 2048 } }), null);
    }
    assert.equal(
      anthropicRefuses({ messages: [USER('x')], reasoning_effort: 'low' }, 1024)?.param,
      'reasoning_effort',
      "judged against the provider's default max_tokens when none is given",
    );
  });

  it('passes the opaque end-user id as metadata.user_id (safety_identifier first, else user) and drops prompt_cache_key', () => {
    assert.deepEqual(ask({ safety_identifier: 'sid', user: 'uid' }).metadata, { user_id: 'sid' });
    assert.deepEqual(ask({ user: 'uid' }).metadata, { user_id: 'uid' });
    const body = ask({ prompt_cache_key: 'k' });
    assert.equal(body.metadata, undefined);
    assert.equal(JSON.stringify(body).includes('"k"'), false);
  });
});

describe('Anthropic answer translation', () => {
  const message = (over: Record<string, unknown>) => ({
    id: 'msg',
    type: 'message',
    role: 'assistant',
    model: 'm',
    content: [{ type: 'text', text: 'Hello' }],
    stop_reason: 'end_turn',
    usage: { input_tokens: 5, output_tokens: 2 },
    ...over,
  });

  it('joins text blocks, turns tool_use blocks into tool calls, drops others, and reads usage including cached prompt tokens', () => {
    const result = fromAnthropic(
      'm#0',
      message({
        content: [
          { type: 'thinking', thinking: 'hmm' },
          { type: 'text', text: 'Hel' },
          { type: 'tool_use', id: 't', name: 'f', input: {} },
          { type: 'text', text: 'lo' },
        ],
        usage: { input_tokens: 5, output_tokens: 2, cache_read_input_tokens: 10, cache_creation_input_tokens: null },
      }),
    );
    assert.deepEqual(result, {
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello', tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{}' } }] },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 15, completion_tokens: 2, cached_tokens: 10 },
    });
    assert.equal(fromAnthropic('m#0', message({})).usage!.cached_tokens, undefined, 'no cache reads reported, none assumed');
  });

  it('maps stop_reason to finish_reason', () => {
    const cases: [unknown, string][] = [
      ['end_turn', 'stop'],
      ['stop_sequence', 'stop'],
      ['max_tokens', 'length'],
      ['tool_use', 'tool_calls'],
      ['refusal', 'content_filter'],
      [null, 'stop'],
      ['new_reason', 'stop'],
      // Object.prototype's names are words like any other.
      ['constructor', 'stop'],
      ['toString', 'stop'],
      ['__proto__', 'stop'],
      ['hasOwnProperty', 'stop'],
    ];
    for (const [stop, finish] of cases) assert.equal(fromAnthropic('m#0', message({ stop_reason: stop })).choices[0]!.finish_reason, finish, String(stop));
  });

  it('treats absurd usage as none and refuses a message without content', () => {
    for (const usage of [
      { input_tokens: -5, output_tokens: 2 },
      { input_tokens: 5, output_tokens: 2.5 },
      { input_tokens: 5, output_tokens: 2, cache_read_input_tokens: -1 },
      { input_tokens: 5 },
    ]) {
      assert.equal(fromAnthropic('m#0', message({ usage })).usage, null, JSON.stringify(usage));
    }
    assert.throws(
      () => fromAnthropic('m#0', { type: 'message' }),
      (e: unknown) => e instanceof UpstreamError && e.kind === 'protocol',
    );
  });
});

describe('Anthropic stream translation', () => {
  const ev = (data: Record<string, unknown>): SseMessage => ({ type: 'event', event: String(data.type), data });
  async function* feed(events: SseMessage[]): AsyncGenerator<SseMessage> {
    yield* events;
  }
  const START = ev({
    type: 'message_start',
    message: { id: 'msg', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 9, output_tokens: 1 } },
  });

  it('turns events into OpenAI chunks: role first, text deltas, finish reason, then usage', async () => {
    const chunks = await collect(
      anthropicChunks(
        ROUTE,
        feed([
          START,
          ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
          ev({ type: 'ping' }),
          ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }),
          ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } }),
          ev({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{' } }),
          ev({ type: 'content_block_stop', index: 0 }),
          ev({ type: 'message_delta', delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: 2 } }),
          ev({ type: 'message_stop' }),
        ]),
      ),
    );
    assert.deepEqual(chunks, [
      { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
      { choices: [{ index: 0, delta: { content: 'Hel' } }] },
      { choices: [{ index: 0, delta: { content: 'lo' } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'length' }] },
      { choices: [], usage: { prompt_tokens: 9, completion_tokens: 2 } },
    ]);
  });

  it('marks the cache reads of message_start (or a restating message_delta) as cached prompt tokens', async () => {
    const usage = async (deltaUsage: Record<string, unknown>) =>
      (
        await collect(
          anthropicChunks(
            ROUTE,
            feed([
              ev({
                type: 'message_start',
                message: {
                  id: 'msg',
                  type: 'message',
                  role: 'assistant',
                  content: [],
                  usage: { input_tokens: 3, cache_read_input_tokens: 40, cache_creation_input_tokens: 7, output_tokens: 1 },
                },
              }),
              ev({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: deltaUsage }),
              ev({ type: 'message_stop' }),
            ]),
          ),
        )
      ).at(-1)!.usage;
    assert.deepEqual(await usage({ output_tokens: 5 }), { prompt_tokens: 50, completion_tokens: 5, cached_tokens: 40 });
    assert.deepEqual(await usage({ output_tokens: 5, input_tokens: 3, cache_read_input_tokens: 30 }), {
      prompt_tokens: 33,
      completion_tokens: 5,
      cached_tokens: 30,
    });
  });

  it('sends no usage chunk when the usage is absurd', async () => {
    const chunks = await collect(
      anthropicChunks(
        ROUTE,
        feed([START, ev({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: -1 } }), ev({ type: 'message_stop' })]),
      ),
    );
    assert.ok(chunks.every((c) => c.usage === undefined));
  });

  it('throws the classified failure on an error event, after what came before', async () => {
    const { chunks, error } = await drain(
      anthropicChunks(
        ROUTE,
        feed([
          START,
          ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }),
          ev({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
        ]),
      ),
    );
    assert.equal(text(chunks), 'Hi');
    assert.ok(error instanceof UpstreamError && error.kind === 'http' && error.status === 529 && error.retryable);
    const bad = await drain(anthropicChunks(ROUTE, feed([ev({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long' } })])));
    assert.ok(bad.error instanceof UpstreamError && bad.error.kind === 'client' && bad.error.upstreamMessage === 'prompt is too long');
    for (const type of ['constructor', 'toString', '__proto__', 'valueOf']) {
      const odd = await drain(anthropicChunks(ROUTE, feed([ev({ type: 'error', error: { type, message: 'x' } })])));
      assert.ok(
        odd.error instanceof UpstreamError && odd.error.kind === 'http' && odd.error.status === 500 && odd.error.retryable,
        `${type}: ${String(odd.error)}`,
      );
    }
  });

  it('throws protocol when the stream ends before message_stop or a delta is malformed', async () => {
    const cut = await drain(anthropicChunks(ROUTE, feed([START, ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } })])));
    assert.equal(text(cut.chunks), 'Hi');
    assert.ok(cut.error instanceof UpstreamError && cut.error.kind === 'protocol');
    const bad = await drain(anthropicChunks(ROUTE, feed([START, ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 5 } })])));
    assert.ok(bad.error instanceof UpstreamError && bad.error.kind === 'protocol');
  });
});

describe('Anthropic provider against the fake Messages API', () => {
  let up: FakeServer;
  let http: UpstreamHttp;
  let chat: ChatCapability;
  before(async () => {
    up = await startAnthropicUpstream({ apiKey: 'sk-ant-fake' });
    http = new UpstreamHttp();
    chat = createAnthropicProvider(http).chat!;
  });
  after(async () => {
    await http.close();
    await up.close();
  });
  const route = (over = {}) => routeTo(up, { provider: 'anthropic', ...over });
  const CONVERSATION: ChatRequest = {
    messages: [{ role: 'system', content: 'Be brief.' }, USER('hello'), USER('there friend')],
  };

  it('completes with x-api-key and anthropic-version, never a Bearer header', async () => {
    const result = await chat.complete(route(), CONVERSATION, never);
    const rec = up.requests.at(-1)!;
    assert.equal(rec.path, '/v1/messages');
    assert.equal(rec.headers['x-api-key'], 'sk-ant-fake');
    assert.equal(rec.headers['anthropic-version'], '2023-06-01');
    assert.equal(rec.headers.authorization, undefined);
    assert.deepEqual(result, {
      choices: [{ index: 0, message: { role: 'assistant', content: 'You said: hello\n\nthere friend' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 5 },
    });
  });

  it('maps max_tokens and stop sequences to the answer finish reasons', async () => {
    const cut = await chat.complete(route(), { messages: [USER('one two three')], max_tokens: 2 }, never);
    assert.deepEqual([cut.choices[0]!.message.content, cut.choices[0]!.finish_reason], ['You said:', 'length']);
    const stopped = await chat.complete(route(), { messages: [USER('one two three')], stop: ['two'] }, never);
    assert.deepEqual([stopped.choices[0]!.message.content, stopped.choices[0]!.finish_reason], ['You said: one', 'stop']);
    assert.deepEqual(up.requests.at(-1)!.body.stop_sequences, ['two']);
  });

  it('streams in OpenAI chunks with usage from message_start and message_delta', async () => {
    const { chunks, error } = await drain(await chat.stream(route(), CONVERSATION, never));
    assert.equal(error, null);
    assert.equal(up.requests.at(-1)!.body.stream, true);
    assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
    assert.equal(text(chunks), 'You said: hello\n\nthere friend');
    assert.equal(chunks.at(-2)!.choices[0]!.finish_reason, 'stop');
    assert.deepEqual(chunks.at(-1), { choices: [], usage: { prompt_tokens: 5, completion_tokens: 5 } });
  });

  it('ends a stream with the upstream error event as a retryable failure', async () => {
    up.next({ errorAfterChunks: 5 });
    const { chunks, error } = await drain(await chat.stream(route(), { messages: [USER('a b c')] }, never));
    assert.equal(text(chunks), 'You said:');
    assert.ok(error instanceof UpstreamError && error.status === 529 && error.retryable);
  });

  it('is misconfigured without a key (and calls nothing) or with a wrong one', async () => {
    const before = up.requests.length;
    await assert.rejects(chat.complete(route({ apiKey: '' }), CONVERSATION, never), (e: unknown) => e instanceof UpstreamError && e.kind === 'config');
    assert.equal(up.requests.length, before);
    await assert.rejects(
      chat.stream(route({ apiKey: 'sk-ant-wrong' }), CONVERSATION, never),
      (e: unknown) => e instanceof UpstreamError && e.kind === 'config' && e.status === 401,
    );
  });

  it('classifies overload as retryable and a refused request as the client error', async () => {
    up.next({ status: 529 }, { status: 400, message: 'prompt is too long: 300000 tokens > 200000 maximum' });
    await assert.rejects(chat.complete(route(), CONVERSATION, never), (e: unknown) => e instanceof UpstreamError && e.status === 529 && e.retryable);
    await assert.rejects(
      chat.complete(route(), CONVERSATION, never),
      (e: unknown) => isClientError(e) && (e as UpstreamError).upstreamMessage!.startsWith('prompt is too long'),
    );
  });
});
