// GET /openapi.json tells the truth (issue 42 §4), three ways:
// - every /v1 operation is fully described: its request body (multipart forms included), its answers
//   by content type (audio, server-sent events), its errors in the spec's envelope;
// - for every operation OpenAI's official document also has (test/fixtures/openai-openapi/, 2.3.0),
//   our request schema takes what theirs allows and our answer schema promises only what theirs
//   allows (test/conformance/openapi-compare.ts), but for the departures listed below with their
//   reasons, each of which must still show;
// - the gateway's real answers (chat, responses, embeddings, transcription, speech, models, errors)
//   validate against our own document (ajv, JSON Schema 2020-12), content type included.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { call } from '../helper.ts';
import { wavBytes } from '../fakes/audio.ts';
import { FORM_FIELDS } from '../../src/transcription/request.ts';
import { startConformanceGateway, type ConformanceGateway } from './gateway.ts';
import { accepts, conforms, Doc, type Problem } from './openapi-compare.ts';

type Schema = Record<string, any>;
const OFFICIAL: Schema = JSON.parse(readFileSync(new URL('../fixtures/openai-openapi/openapi.json', import.meta.url), 'utf8'));
const SDK = { 'x-stainless-lang': 'js' };

/**
 * Where our document differs from OpenAI's on purpose, as `<operation> <request|answer> <content
 * type> <where> <what>` patterns, with why (docs/api/openai-conformance.md says the same to users).
 */
const DEPARTURES: [RegExp, string][] = [
  [
    /^POST \/(chat\/completions|responses) request application\/json \/(messages\/\[\]\/tool_calls\/\[\]|tools\/\[\]|tool_choice)(\/| )/,
    "function tools only: OpenAI's other tool kinds (custom, hosted, allowed_tools) are refused naming the field",
  ],
  [
    /^POST \/chat\/completions request application\/json \/(metadata|prompt_cache_retention|prompt_cache_options|service_tier|modalities|web_search_options|audio|moderation|prediction|function_call|functions) takes no /,
    "OpenAI's fields the gateway does not offer: documented as taken only as null (treated as absent); function_call and functions are refused naming tools",
  ],
  [
    /^POST \/responses request application\/json \/(top_logprobs|prompt_cache_retention|prompt_cache_options|background|max_tool_calls|prompt|service_tier|moderation|stream_options|conversation|context_management) takes no /,
    'stateless, text and function tools: documented as taken only as null (treated as absent)',
  ],
  [
    /^POST \/(chat\/completions|responses) request application\/json \/(reasoning_effort|reasoning\/effort) takes no \["max"\]/,
    "the gateway's reasoning efforts (REASONING_EFFORTS) stop at xhigh",
  ],
  [/^POST \/chat\/completions request application\/json \/stream_options\/include_obfuscation is refused/, 'no obfuscation padding is offered'],
  [/^POST \/responses request application\/json \/text\/verbosity is refused/, 'verbosity is a chat parameter here, not offered under text'],
  [
    /^POST \/responses request application\/json \/reasoning\/(mode|summary|context|generate_summary) is refused/,
    'no reasoning summaries or modes: effort only',
  ],
  [/^POST \/responses request application\/json \/reasoning\/effort takes no null/, 'null is dropped at the top of the body and in tools only'],
  [/^POST \/responses request application\/json \/input\/\[\]\/type takes no null/, "an input item's type is a string when sent"],
  [
    /^POST \/responses request application\/json \/(model|input) is required/,
    'no stored prompts or conversations: the model and the input come with each request',
  ],
  [
    /^POST \/responses answer 200 (application\/json|text\/event-stream) (\/response)?\/text\/format\/(name|schema) is not always sent/,
    'a json_schema text format is echoed as it was sent, named or not',
  ],
  [
    /^POST \/chat\/completions answer 200 (application\/json|text\/event-stream) \/choices\/\[\]\/finish_reason may be any string/,
    "the upstream's finish reason, passed through",
  ],
  [
    /^POST \/(chat\/completions answer 200 text\/event-stream \/(choices|created|id|model|object) is never sent|audio\/speech answer 200 text\/event-stream \/(audio is never sent|type may be \["error"\]))/,
    "a stream's failure is an error event (chat: OpenAI's {error} envelope as data; speech: type error), which the document's stream union lacks",
  ],
  [
    /^POST \/[a-z/]+ answer 429 application\/json \/error is never sent/,
    "the spec's per-key RPM/TPD 429 is a bare {detail} for clients that are not OpenAI's SDKs",
  ],
  [/^POST \/embeddings answer 200 application\/json \/data\/\[\]\/embedding may be string/, 'base64 embeddings are a string, as OpenAI answers them'],
  [
    /^POST \/audio\/transcriptions request multipart\/form-data \/(languages|keywords|include|chunking_strategy|known_speaker_names|known_speaker_references) is refused/,
    'not offered: refused naming the field',
  ],
  [
    /^POST \/audio\/transcriptions request multipart\/form-data \/response_format takes no \["diarized_json"\]/,
    'speaker labels are the jobs endpoint (diarize)',
  ],
  [
    /^POST \/audio\/transcriptions (request multipart\/form-data \/stream takes no null|answer 200 text\/event-stream is not documented)/,
    'streamed transcription is the realtime WebSocket: stream is false when sent',
  ],
  [/^POST \/audio\/speech request application\/json \/voice takes no object/, "a voice is one of the model's voice names; no custom voice ids"],
  [/^POST \/audio\/speech answer 200 application\/octet-stream is not documented/, "the spec's content type by response_format (audio/mpeg...)"],
  [
    /^POST \/audio\/speech answer 200 text\/event-stream \/usage\/(input|output|total)_tokens is never sent/,
    'speech is billed by characters: usage {type: characters, characters}',
  ],
];

/** Our operations under /v1 that OpenAI's document has, by its path. */
const operations = (doc: Schema): [string, string][] =>
  Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops as Schema).map((m) => [p, m] as [string, string]));
const mediaType = (header: string | null) => (header ?? '').split(';')[0]!.trim();

describe("GET /openapi.json: every /v1 operation described, against OpenAI's document and the gateway's own answers", () => {
  let fixture: ConformanceGateway;
  let doc: Schema;
  let ours: Doc;
  before(async () => {
    fixture = await startConformanceGateway();
    const res = await call(fixture.gw.url, 'GET', '/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body;
    ours = new Doc(doc);
  });
  after(() => fixture?.close());

  it('every /v1 operation declares its request body, its answers by content type, and its errors in the envelope', () => {
    const v1 = operations(doc).filter(([p]) => p.startsWith('/v1/'));
    assert.ok(v1.length >= 12, v1.join(' '));
    for (const [path, method] of v1) {
      const op = doc.paths[path][method];
      const what = `${method.toUpperCase()} ${path}`;
      const answers = Object.entries(op.responses as Record<string, Schema>);
      const ok = answers.filter(([s]) => s.startsWith('2'));
      // A 204 (DELETE of a call's recording) has no content, by definition.
      assert.ok(
        ok.length > 0 && ok.every(([s, r]) => s === '204' || (r.content && Object.keys(r.content).length > 0)),
        `${what}: a success answer with its content`,
      );
      if (method === 'post' && !path.includes('/callback/') && !/\/(cancel|hangup|pause|resume)$/.test(path))
        assert.ok(op.requestBody?.content, `${what}: a request body`);
      for (const [status, r] of answers.filter(([s]) => /^[45]/.test(s))) {
        if (status === '413' && r.content['text/html']) continue; // the spec's plain page for an upload
        const schema = ours.deref(r.content?.['application/json']?.schema);
        const shapes = ours.members(schema) ?? [schema];
        assert.ok(
          shapes.every((s) => ours.object(s)?.properties.error || ours.object(s)?.properties.detail),
          `${what} ${status}: the error envelope (or the per-key 429's {detail})`,
        );
      }
    }
    const content = (path: string, status: string) => Object.keys(doc.paths[path].post.responses[status].content);
    for (const path of ['/v1/chat/completions', '/v1/responses', '/v1/audio/speech']) assert.ok(content(path, '200').includes('text/event-stream'), path);
    for (const type of ['audio/mpeg', 'audio/wav', 'audio/ogg', 'audio/flac', 'audio/aac', 'audio/L16', 'audio/basic'])
      assert.ok(content('/v1/audio/speech', '200').includes(type), type);
    for (const [path, endpoint] of [
      ['/v1/audio/transcriptions', 'sync'],
      ['/v1/audio/translations', 'translations'],
      ['/v1/audio/transcriptions/jobs', 'jobs'],
    ] as const) {
      const form = ours.object(doc.paths[path].post.requestBody.content['multipart/form-data'].schema)!;
      assert.deepEqual(Object.keys(form.properties).sort(), ['file', ...FORM_FIELDS[endpoint]].sort(), `${path}: the fields the gateway reads`);
      assert.deepEqual([...form.required].sort(), ['file', 'model']);
    }
    assert.deepEqual(content('/v1/audio/transcriptions/jobs', '202'), ['application/json']);
    assert.deepEqual(Object.keys(doc.paths['/v1/audio/transcriptions/jobs/{id}'].get.responses['200'].content), ['application/json', 'text/plain']);
  });

  it("for every operation OpenAI's document has: our requests take what theirs allow, our answers promise only what theirs allow", () => {
    const theirs = new Doc(OFFICIAL);
    const found: string[] = [];
    for (const [path, method] of operations(OFFICIAL)) {
      const op = OFFICIAL.paths[path][method];
      const mine = doc.paths[`/v1${path}`]?.[method];
      const what = `${method.toUpperCase()} ${path}`;
      assert.ok(mine, `${what} is not in our document`);
      const said = (kind: string, type: string) => (p: Problem) => `${what} ${kind} ${type} ${p.at || '/'} ${p.message}`;
      for (const [type, media] of Object.entries((op.requestBody?.content ?? {}) as Record<string, Schema>)) {
        const our = mine.requestBody?.content?.[type]?.schema;
        if (!our) found.push(`${what} request ${type} is not documented`);
        else found.push(...accepts(ours, our, theirs, media.schema).map(said('request', type)));
      }
      for (const [status, answer] of Object.entries(op.responses as Record<string, Schema>)) {
        const r = theirs.deref(answer);
        for (const [type, media] of Object.entries((r.content ?? {}) as Record<string, Schema>)) {
          const our = mine.responses?.[status]?.content?.[type]?.schema;
          if (!our) found.push(`${what} answer ${status} ${type} is not documented`);
          else found.push(...conforms(ours, our, theirs, media.schema).map(said(`answer ${status}`, type)));
        }
      }
    }
    const unexplained = found.filter((f) => !DEPARTURES.some(([re]) => re.test(f)));
    assert.deepEqual(unexplained, [], "differences from OpenAI's document that are not listed departures");
    for (const [re, why] of DEPARTURES)
      assert.ok(
        found.some((f) => re.test(f)),
        `the departure ${re} (${why}) no longer shows: remove it`,
      );
  });

  describe("the gateway's answers validate against its own document", () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    let key: string;
    before(() => {
      ajv.addSchema(doc, 'ours');
      key = fixture.key;
    });
    const v1 = (path: string, body: unknown, method = 'POST') =>
      fetch(`${fixture.gw.url}/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...SDK, ...(body instanceof FormData || body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body instanceof FormData ? body : body === undefined ? undefined : JSON.stringify(body),
      });
    /** Our document's schema for an answer, compiled. */
    const validator = (path: string, method: string, status: number, type: string) => {
      const pointer = `ours#/paths/${path.replaceAll('~', '~0').replaceAll('/', '~1')}/${method}/responses/${status}/content/${type.replaceAll('/', '~1')}/schema`;
      return ajv.getSchema(pointer) ?? ajv.compile({ $ref: pointer });
    };
    /** The answer against our document's schema for its status and content type; returns the parsed values. */
    const holds = async (path: string, method: string, res: Response, what: string): Promise<unknown[]> => {
      const type = mediaType(res.headers.get('content-type'));
      const declared = doc.paths[path]?.[method]?.responses?.[String(res.status)]?.content;
      const text = Buffer.from(await res.arrayBuffer());
      assert.ok(declared, `${what}: ${method} ${path} declares no ${res.status}: ${text.toString().slice(0, 300)}`);
      assert.ok(type in declared, `${what}: ${res.status} ${type} is not among ${Object.keys(declared).join(', ')}`);
      const validate = validator(path, method, res.status, type);
      const values: unknown[] =
        type === 'text/event-stream'
          ? text
              .toString()
              .split('\n')
              .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
              .map((l) => JSON.parse(l.slice(6)))
          : type === 'application/json'
            ? [JSON.parse(text.toString())]
            : type.startsWith('text/')
              ? [text.toString()]
              : [text.toString('base64')];
      assert.ok(values.length > 0 && text.length > 0, `${what}: an empty answer`);
      for (const v of values) assert.ok(validate(v), `${what}: ${JSON.stringify(validate.errors?.slice(0, 3))} in ${JSON.stringify(v).slice(0, 400)}`);
      return values;
    };

    it('models, chat (plain, log probabilities, tool calls; JSON and streamed), responses (text, function calls; JSON and streamed), embeddings', async () => {
      // The schemas hold something: an empty object is not a completion, a response or a chunk.
      for (const type of ['application/json', 'text/event-stream']) {
        assert.equal(validator('/v1/chat/completions', 'post', 200, type)({}), false, type);
        assert.equal(validator('/v1/responses', 'post', 200, type)({}), false, type);
      }
      await holds('/v1/models', 'get', await v1('/models', undefined, 'GET'), 'models');
      await holds('/v1/models/{model}', 'get', await v1('/models/whisper', undefined, 'GET'), 'a model');
      const ask = { model: 'chat', messages: [{ role: 'user', content: 'tell me about rivers' }] };
      const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { query: { type: 'string' } } } } }];
      for (const body of [
        ask,
        { ...ask, logprobs: true, top_logprobs: 2, seed: null, stop: null },
        { model: 'chat', messages: [{ role: 'user', content: 'Paris' }], tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } },
      ]) {
        await holds('/v1/chat/completions', 'post', await v1('/chat/completions', body), 'chat');
        const events = await holds(
          '/v1/chat/completions',
          'post',
          await v1('/chat/completions', { ...body, stream: true, stream_options: { include_usage: true } }),
          'chat stream',
        );
        assert.ok(events.length > 2);
      }
      const tool = {
        type: 'function',
        name: 'get_weather',
        description: null,
        parameters: { type: 'object', properties: { query: { type: 'string' } } },
        strict: false,
      };
      for (const body of [
        { model: 'chat', instructions: 'Be brief.', input: 'tell me about rivers', metadata: { k: 'v' }, temperature: null },
        { model: 'chat', input: 'Paris', tools: [tool], tool_choice: { type: 'function', name: 'get_weather' } },
      ]) {
        await holds('/v1/responses', 'post', await v1('/responses', body), 'responses');
        await holds('/v1/responses', 'post', await v1('/responses', { ...body, stream: true }), 'responses stream');
      }
      for (const encoding_format of ['float', 'base64'])
        await holds(
          '/v1/embeddings',
          'post',
          await v1('/embeddings', { model: 'emb', input: ['one', 'two'], encoding_format }),
          `embeddings ${encoding_format}`,
        );
    });

    it('transcriptions and translations (json, verbose_json, text, srt), speech (pcm, wav; sse)', async () => {
      const form = (fields: Record<string, string>) => {
        const f = new FormData();
        for (const [k, v] of Object.entries(fields)) f.append(k, v);
        f.append('file', new Blob([wavBytes(3)], { type: 'audio/wav' }), 'clip.wav');
        return f;
      };
      for (const response_format of ['json', 'verbose_json', 'text', 'srt']) {
        await holds(
          '/v1/audio/transcriptions',
          'post',
          await v1('/audio/transcriptions', form({ model: 'whisper', response_format })),
          `transcription ${response_format}`,
        );
        await holds(
          '/v1/audio/translations',
          'post',
          await v1('/audio/translations', form({ model: 'whisper', response_format })),
          `translation ${response_format}`,
        );
      }
      for (const response_format of ['pcm', 'wav'])
        await holds(
          '/v1/audio/speech',
          'post',
          await v1('/audio/speech', { model: 'tts', voice: 'nova', input: 'Hello there.', response_format }),
          `speech ${response_format}`,
        );
      await holds(
        '/v1/audio/speech',
        'post',
        await v1('/audio/speech', { model: 'tts', voice: 'nova', input: 'Hello there.', stream_format: 'sse' }),
        'speech sse',
      );
    });

    it('errors: 400 (a refused field, a missing file), 401, 404, 429 for an SDK and for another client', async () => {
      await holds('/v1/chat/completions', 'post', await v1('/chat/completions', { model: 'chat', messages: [], temperature: 3 }), 'a refused field');
      const noFile = new FormData();
      noFile.append('model', 'whisper');
      await holds('/v1/audio/transcriptions', 'post', await v1('/audio/transcriptions', noFile), 'no file');
      await holds('/v1/models', 'get', await fetch(`${fixture.gw.url}/v1/models`), 'no key');
      await holds(
        '/v1/chat/completions',
        'post',
        await v1('/chat/completions', { model: 'nope', messages: [{ role: 'user', content: 'hi' }] }),
        'unknown model',
      );
      await holds('/v1/audio/speech', 'post', await v1('/audio/speech', { model: 'tts', voice: 'nobody', input: 'hi' }), 'unknown voice');
      const limited = (headers: Record<string, string>) =>
        fetch(`${fixture.gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${fixture.limitedKey}`, 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }),
        });
      const first = await limited({});
      if (first.status === 200) await first.arrayBuffer();
      for (const headers of [SDK, {}]) {
        const res = await limited(headers);
        assert.equal(res.status, 429);
        await holds('/v1/chat/completions', 'post', res, `per-key 429 ${JSON.stringify(headers)}`);
      }
    });
  });
});
