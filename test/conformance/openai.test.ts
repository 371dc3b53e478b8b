// Conformance with OpenAI's official OpenAPI document (openai/openai-openapi 2.3.0, vendored in
// test/fixtures/openai-openapi/): every /v1 operation the gateway shares with OpenAI is driven as a
// client would (fake upstreams behind it speaking OpenAI's wire format), and each answer, each SSE
// event and each realtime event is validated against the document's schema for it (JSON Schema
// 2020-12, ajv). A missing required field, a wrong type or an event type the document lacks fails.
// What the gateway answers off the document on purpose (the spec's own shapes) is listed in DEPARTURES
// below and in docs/api/openai-conformance.md: each must fail exactly where it is said to, so a
// departure that silently changes, or goes, fails too.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { call, type TestGateway, inOneRateWindow } from '../helper.ts';
import { startConformanceGateway, type ConformanceGateway } from './gateway.ts';
import { wavBytes } from '../fakes/audio.ts';
import { multipartForm } from '../transcription/form.ts';
import { connect, encode, skipSpeech, speech16k } from '../realtime/helpers.ts';
import { answerSchema, check, DOCUMENT, eventSchemas, type Problem } from './openapi.ts';

const JSON_TYPE = 'application/json';
const SSE_TYPE = 'text/event-stream';
/** What OpenAI's SDKs send (the gateway then answers a per-key 429 in OpenAI's envelope: docs/api/errors.md). */
const SDK = { 'x-stainless-lang': 'js' };

/**
 * Where the gateway answers off the document on purpose, as the problems the validator reports
 * (the reason of each: docs/api/openai-conformance.md). `at` is the JSON pointer of the field.
 */
const DEPARTURES = {
  /** speech.audio.done's usage counts characters (the spec bills speech by characters), not tokens. */
  speechUsage: [/^\/usage /],
  /** The spec's per-key RPM/TPD 429: a bare {detail}, not OpenAI's {error} (for clients that are not OpenAI's SDKs). */
  bareDetail: [/^\/ must have required property 'error'/],
  /** base64 embeddings are a string, as OpenAI answers them; the document types the embedding as numbers only. */
  base64Embedding: [/^\/data\/\d+\/embedding must be array/],
  /**
   * The spec's own greeting, transcription_session.created, and the beta update's answer: the
   * document's beta schema for them is the REST session object, whose ephemeral `client_secret` is
   * required; the socket is opened with the API key, and no ephemeral key exists here.
   */
  betaSession: [/^\/session must have required property 'client_secret'/],
  /**
   * The socket's audio at the spec's rates: `audio/pcm` at 16 kHz (the spec's default) or 8 kHz is
   * reported as it is; the document knows pcm at 24 kHz only.
   */
  pcmRate: [/^\/session\/audio\/input\/format\/rate must be equal to one of the allowed values \[24000\]/],
  /** The beta shape's turn detection off: null, as the beta update takes it; the document types it an object. */
  betaTurnDetectionOff: [/^\/session\/turn_detection must be object/],
} as const;

describe(`the /v1 operations against OpenAI's OpenAPI document ${DOCUMENT.info.version}`, () => {
  let fixture: ConformanceGateway;
  let gw: TestGateway;
  let key: string;
  let limitedKey: string;
  const v1 = (path: string, opts: Parameters<typeof call>[3] = {}, method = 'POST') =>
    call(gw.url, method, `/v1${path}`, { token: key, ...opts, headers: { ...SDK, ...opts.headers } });

  before(async () => {
    fixture = await startConformanceGateway();
    ({ gw, key, limitedKey } = fixture);
  });
  after(() => fixture?.close());

  /** `value` conforms to the schema at `pointer`, but for the `departures` (each of which must show). */
  const conforms = (pointer: string, value: unknown, what: string, departures: readonly RegExp[] = []) => {
    const problems = check(pointer, value);
    const said = (p: Problem) => `${p.at} ${p.message}`;
    const unexpected = problems.filter((p) => !departures.some((d) => d.test(said(p))));
    assert.deepEqual(unexpected.map(said), [], `${what}: ${JSON.stringify(value).slice(0, 600)}`);
    for (const d of departures)
      assert.ok(
        problems.some((p) => d.test(said(p))),
        `${what}: the listed departure ${d} no longer shows; update DEPARTURES and docs/api/openai-conformance.md`,
      );
  };
  /** An operation's JSON answer against the document's schema for it. */
  const answers = (path: string, method: string, res: { status: number; body: unknown; headers: Headers; text: string }, what: string) => {
    assert.equal(res.status, 200, `${what}: ${res.text.slice(0, 300)}`);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    conforms(answerSchema(path, method, 200, JSON_TYPE), res.body, what);
  };
  /** The events of an SSE answer, each against its schema in the document's union (by `type`), or the one stream schema. */
  const streams = (
    res: { status: number; text: string; headers: Headers },
    schemaOf: (event: Record<string, any>) => string | undefined,
    what: string,
    departures: Record<string, readonly RegExp[]> = {},
  ) => {
    assert.equal(res.status, 200, `${what}: ${res.text.slice(0, 300)}`);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const events = res.text
      .split('\n\n')
      .flatMap((frame) =>
        frame
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6)),
      )
      .filter((d) => d !== '[DONE]')
      .map((d) => JSON.parse(d) as Record<string, any>);
    assert.ok(events.length > 0, `${what}: no events`);
    for (const event of events) {
      const pointer = schemaOf(event);
      assert.ok(pointer, `${what}: the event type '${event.type}' is not in the document`);
      conforms(pointer, event, `${what}, ${event.type ?? 'chunk'}`, departures[event.type] ?? []);
    }
    return events;
  };

  it('GET /v1/models and /v1/models/{model}', async () => {
    const list = await v1('/models', {}, 'GET');
    answers('/models', 'get', list, 'models list');
    assert.ok(list.body.data.length >= 4);
    for (const id of ['chat', 'whisper', 'stt-local']) answers('/models/{model}', 'get', await v1(`/models/${id}`, {}, 'GET'), `model ${id}`);
  });

  it('POST /v1/chat/completions: answers (plain, log probabilities, tool calls) and every stream chunk', async () => {
    const ask = { model: 'chat', messages: [{ role: 'user', content: 'tell me about rivers' }] };
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { query: { type: 'string' } } } } }];
    for (const [what, body] of [
      ['plain', ask],
      ['logprobs', { ...ask, logprobs: true, top_logprobs: 2 }],
      ['tools', { model: 'chat', messages: [{ role: 'user', content: 'Paris' }], tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } }],
    ] as const) {
      const res = await v1('/chat/completions', { body });
      answers('/chat/completions', 'post', res, `chat ${what}`);
      if (what === 'tools') assert.equal(res.body.choices[0].message.tool_calls[0].function.name, 'get_weather');
      if (what === 'logprobs') assert.ok(res.body.choices[0].logprobs.content.length > 0, 'log probabilities were validated');
      const chunk = answerSchema('/chat/completions', 'post', 200, SSE_TYPE);
      const events = streams(
        await v1('/chat/completions', { body: { ...body, stream: true, stream_options: { include_usage: true } } }),
        () => chunk,
        `chat ${what} stream`,
      );
      assert.ok(events.at(-1)!.usage, 'the usage chunk');
    }
  });

  it('POST /v1/responses: answers (text, function calls) and every stream event', async () => {
    const responseEvent = eventSchemas(answerSchema('/responses', 'post', 200, SSE_TYPE));
    const tool = { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { query: { type: 'string' } } }, strict: false };
    for (const [what, body] of [
      ['text', { model: 'chat', instructions: 'Be brief.', input: 'tell me about rivers', metadata: { k: 'v' } }],
      ['function call', { model: 'chat', input: 'Paris', tools: [tool], tool_choice: { type: 'function', name: 'get_weather' } }],
    ] as const) {
      answers('/responses', 'post', await v1('/responses', { body }), `responses ${what}`);
      const events = streams(await v1('/responses', { body: { ...body, stream: true } }), (e) => responseEvent(e.type), `responses ${what} stream`);
      assert.equal(events.at(-1)!.type, 'response.completed');
    }
    // An upstream that breaks mid-stream: the error event and response.failed are the document's too.
    fixture.up.next({ errorAfterChunks: 4 });
    const broken = streams(
      await v1('/responses', { body: { model: 'chat', input: 'tell me about rivers', stream: true } }),
      (e) => responseEvent(e.type),
      'responses broken stream',
    );
    assert.deepEqual(
      broken.slice(-2).map((e) => e.type),
      ['error', 'response.failed'],
    );
  });

  it('POST /v1/embeddings, float and base64', async () => {
    answers('/embeddings', 'post', await v1('/embeddings', { body: { model: 'emb', input: ['one', 'two'], encoding_format: 'float' } }), 'embeddings float');
    const base64 = await v1('/embeddings', { body: { model: 'emb', input: ['one', 'two'], encoding_format: 'base64' } });
    assert.equal(base64.status, 200, base64.text);
    conforms(answerSchema('/embeddings', 'post', 200, JSON_TYPE), base64.body, 'embeddings base64', DEPARTURES.base64Embedding);
  });

  it('POST /v1/audio/transcriptions and /v1/audio/translations, json and verbose_json', async () => {
    // The document's answer is a oneOf whose json branch (text required) every verbose_json answer
    // also satisfies, so no answer can match exactly one: each is checked against the branch its
    // response_format names, as OpenAI's own are.
    const branch = (path: string, format: string) => {
      const union = DOCUMENT.paths[path].post.responses['200'].content[JSON_TYPE].schema.oneOf as { $ref: string }[];
      const name = `Create${path.endsWith('translations') ? 'Translation' : 'Transcription'}Response${format === 'json' ? 'Json' : 'VerboseJson'}`;
      const member = union.find((m) => m.$ref.endsWith(`/${name}`));
      assert.ok(member, `${name} in ${path}'s answers`);
      return member.$ref.slice(1);
    };
    for (const path of ['/audio/transcriptions', '/audio/translations']) {
      for (const response_format of ['json', 'verbose_json']) {
        const fields: Record<string, string> = { model: 'whisper', response_format };
        if (path.endsWith('transcriptions') && response_format === 'verbose_json') fields['timestamp_granularities[]'] = 'word';
        const res = await v1(path, multipartForm(fields, wavBytes(3)));
        assert.equal(res.status, 200, res.text);
        conforms(branch(path, response_format), res.body, `${path} ${response_format}`);
      }
    }
  });

  it('POST /v1/audio/speech: audio, and every speech event of stream_format sse', async () => {
    const speechEvent = eventSchemas(answerSchema('/audio/speech', 'post', 200, SSE_TYPE));
    const audio = await fetch(`${gw.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': JSON_TYPE },
      body: JSON.stringify({ model: 'tts', voice: 'nova', input: 'Hello there.', response_format: 'pcm' }),
    });
    assert.equal(audio.status, 200);
    assert.ok((await audio.arrayBuffer()).byteLength > 0);
    const sse = await v1('/audio/speech', { body: { model: 'tts', voice: 'nova', input: 'Hello there.', stream_format: 'sse' } });
    const events = streams(sse, (e) => speechEvent(e.type), 'speech sse', { 'speech.audio.done': DEPARTURES.speechUsage });
    assert.deepEqual([...new Set(events.map((e) => e.type))], ['speech.audio.delta', 'speech.audio.done']);
  });

  it("errors are OpenAI's ErrorResponse: invalid JSON, 401, 404, 405, 413 on a JSON body, a refused field, and the 429 for its SDKs", async () => {
    const error = '/components/schemas/ErrorResponse';
    const refusals: [string, Promise<{ status: number; body: unknown; text: string }>, number][] = [
      ['invalid JSON', call(gw.url, 'POST', '/v1/chat/completions', { token: key, raw: '{"model": ', headers: { 'content-type': JSON_TYPE } }), 400],
      ['no key', call(gw.url, 'GET', '/v1/models'), 401],
      ['unknown model', v1('/chat/completions', { body: { model: 'nope', messages: [{ role: 'user', content: 'hi' }] } }), 404],
      ['unknown route', v1('/nope', {}, 'GET'), 404],
      ['wrong method', v1('/chat/completions', {}, 'GET'), 405],
      [
        'too large',
        v1('/chat/completions', { body: { model: 'chat', messages: [{ role: 'user', content: 'x'.repeat(gw.config.http.inferenceBodyLimitBytes) }] } }),
        413,
      ],
      ['a refused field', v1('/chat/completions', { body: { model: 'chat', messages: [{ role: 'user', content: 'hi' }], temperature: 3 } }), 400],
    ];
    for (const [what, pending, status] of refusals) {
      const res = await pending;
      assert.equal(res.status, status, `${what}: ${res.text.slice(0, 300)}`);
      conforms(error, res.body, what);
    }
    // The per-key 429: OpenAI's envelope (beside the spec's `detail`) for OpenAI's SDKs, the spec's bare {detail} for others.
    const ask = { model: 'chat', messages: [{ role: 'user', content: 'hi' }] };
    await inOneRateWindow();
    assert.equal((await call(gw.url, 'POST', '/v1/chat/completions', { token: limitedKey, body: ask })).status, 200);
    const sdk = await call(gw.url, 'POST', '/v1/chat/completions', { token: limitedKey, body: ask, headers: SDK });
    assert.equal(sdk.status, 429);
    conforms(answerSchema('/chat/completions', 'post', 429, JSON_TYPE), sdk.body, 'per-key 429, an SDK');
    const bare = await call(gw.url, 'POST', '/v1/chat/completions', { token: limitedKey, body: ask });
    assert.equal(bare.status, 429);
    conforms(answerSchema('/chat/completions', 'post', 429, JSON_TYPE), bare.body, 'per-key 429, another client', DEPARTURES.bareDetail);
  });

  it("an upload over 25 MB is the spec's plain 413 page, not JSON (off the document: the spec says so)", async () => {
    const answer = await new Promise<{ status: number; type: string }>((resolve, reject) => {
      // A length over the limit, and no body: refused on the length alone.
      const req = request(
        `${gw.url}/v1/audio/transcriptions`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'multipart/form-data; boundary=x', 'content-length': String(26 * 1024 * 1024) },
        },
        (res) => {
          res.resume();
          resolve({ status: res.statusCode!, type: String(res.headers['content-type']) });
        },
      );
      req.on('error', reject);
      req.flushHeaders();
    });
    assert.equal(answer.status, 413);
    assert.match(answer.type, /^text\/html/);
  });

  it('WS /v1/realtime: every event of a transcription session, GA and beta updates, an error', { skip: skipSpeech }, async () => {
    const realtimeEvent = eventSchemas('/components/schemas/RealtimeServerEvent', [/^RealtimeServerEvent/, /^RealtimeBetaServerEvent/]);
    const c = await connect(gw.url, { model: 'stt-local', api_key: key }, {}, '/v1/realtime');
    await c.next('session.created');
    c.send({ type: 'transcription_session.update', session: { turn_detection: null } });
    await c.next('transcription_session.updated');
    c.send({
      type: 'session.update',
      session: {
        type: 'transcription',
        audio: {
          input: { format: { type: 'audio/pcm', rate: 16000 }, transcription: { model: 'stt-local', language: 'en' }, turn_detection: { type: 'server_vad' } },
        },
      },
    });
    await c.next('session.updated');
    c.send({ type: 'input_audio_buffer.commit' }); // nothing buffered: an error
    await c.next('error');
    c.ws.send(encode(speech16k(0.5, 1.2), 'pcm_s16le'));
    await c.next('conversation.item.input_audio_transcription.completed');
    c.ws.send(encode(speech16k(0.2, 0), 'pcm_s16le').subarray(0, 6400));
    c.send({ type: 'input_audio_buffer.clear' });
    await c.next('input_audio_buffer.cleared');
    c.ws.close();
    await c.closed;
    const types = new Set(c.frames.map((f) => f.type));
    for (const t of [
      'session.created',
      'session.updated',
      'input_audio_buffer.speech_started',
      'input_audio_buffer.speech_stopped',
      'input_audio_buffer.committed',
      'conversation.item.input_audio_transcription.delta',
      'conversation.item.input_audio_transcription.completed',
      'error',
    ]) {
      assert.ok(types.has(t), `${t} among ${[...types].join(', ')}`);
    }
    const departures: Record<string, readonly RegExp[]> = {
      'transcription_session.created': DEPARTURES.betaSession,
      'transcription_session.updated': [...DEPARTURES.betaSession, ...DEPARTURES.betaTurnDetectionOff],
      'session.updated': DEPARTURES.pcmRate,
    };
    for (const frame of c.frames) {
      if (frame.type === 'transcription_session.done') continue; // the spec's end of session: no such event in the document
      const pointer = realtimeEvent(frame.type);
      assert.ok(pointer, `the realtime event type '${frame.type}' is not in the document`);
      conforms(pointer, frame, `realtime ${frame.type}`, departures[frame.type] ?? []);
    }
  });
});
