// Multipart uploads (the transcription endpoints) that are not what they claim: a body that is not
// well-formed multipart is a 400 saying what is wrong, never a 500; an upload whose connection
// closes before its body arrived (the client left, or was answered 408 for its slowness) is logged
// at info as the client's doing, not as the gateway's failure.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger.ts';
import { call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { exchange, openSocket } from './raw-socket.ts';
import { multipartForm } from '../transcription/form.ts';

const ROUTES = ['/v1/audio/transcriptions', '/v1/audio/transcriptions/jobs'];

describe('multipart uploads that are not what they claim', () => {
  const lines: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  let gw: TestGateway;
  let apiKey: string;

  before(async () => {
    gw = await startTestGateway({ http: { requestTimeoutMs: 1500, headersTimeoutMs: 1000 } }, { logger: createLogger('info', sink) });
    apiKey = (await createKey(gw.url, (await signup(gw.url)).token)).api_key;
  });
  after(async () => gw?.destroy());

  const post = (path: string, raw: string, contentType = 'multipart/form-data; boundary=x') =>
    call(gw.url, 'POST', path, { token: apiKey, raw, headers: { 'content-type': contentType } });

  it('answers a body that is not well-formed multipart with 400 invalid_request saying what is wrong', async () => {
    const field = '--x\r\ncontent-disposition: form-data; name="model"\r\n\r\nstt-local\r\n';
    const file = '--x\r\ncontent-disposition: form-data; name="file"; filename="a.wav"\r\ncontent-type: audio/wav\r\n\r\nRIFF0000WAVE';
    for (const path of ROUTES) {
      for (const [what, raw, contentType] of [
        ['no closing boundary after a field', field, undefined],
        ['a file part cut short', field + file, undefined],
        ['no boundary in the Content-Type', field, 'multipart/form-data'],
      ] as const) {
        const res = await post(path, raw, contentType);
        assert.equal(res.status, 400, `${path}, ${what}: ${res.text}`);
        assert.equal(res.body.error.code, 'invalid_request', what);
        assert.equal(res.body.error.type, 'invalid_request_error', what);
        assert.equal(res.body.error.request_id, res.headers.get('x-request-id'), what);
        assert.match(res.body.error.message, contentType ? /names no boundary/ : /ends before its closing boundary/, what);
      }
    }
    assert.deepEqual(
      lines.filter((l) => l.level >= 50),
      [],
      'nothing logged as an error',
    );
  });

  it("refuses 'model' and 'prompt' fields as a JSON body's are refused: a control character, over 200 characters, a NUL", async () => {
    for (const path of ROUTES) {
      for (const [model, why] of [
        ['\u0000', /control characters/],
        ['a\u0001', /control characters/],
        ['m'.repeat(201), /more than 200 characters/],
      ] as const) {
        const res = await call(gw.url, 'POST', path, { token: apiKey, ...multipartForm({ model }, Buffer.from('RIFF0000WAVE')) });
        assert.equal(res.status, 400, `${path} ${JSON.stringify(model.slice(0, 10))}: ${res.text}`);
        assert.equal(res.body.error.code, 'invalid_request');
        assert.equal(res.body.error.param, 'model');
        assert.match(res.body.error.message, why);
      }
    }
    for (const path of ROUTES) {
      const res = await call(gw.url, 'POST', path, {
        token: apiKey,
        ...multipartForm({ model: 'stt-local', prompt: 'say \u0000' }, Buffer.from('RIFF0000WAVE')),
      });
      assert.equal(res.status, 400, res.text);
      assert.deepEqual([res.body.error.code, res.body.error.param], ['invalid_request', 'prompt']);
      assert.match(res.body.error.message, /must not contain NUL characters or unpaired surrogates/);
    }
    // The same words as the JSON routes'.
    const json = await call(gw.url, 'POST', '/v1/audio/speech', { token: apiKey, body: { model: 'a\u0001', input: 'hi', voice: 'alloy' } });
    const form = await call(gw.url, 'POST', ROUTES[0]!, { token: apiKey, ...multipartForm({ model: 'a\u0001' }, Buffer.from('RIFF0000WAVE')) });
    assert.equal(form.body.error.message, json.body.error.message);
  });

  it('refuses a text field over 64 KiB naming it, never cuts it', async () => {
    for (const path of ROUTES) {
      for (const [name, value] of [
        ['prompt', 'p'.repeat(3_000_000)],
        ['model', 'm'.repeat(1_000_000)],
        ['language', 'x'.repeat(64 * 1024 + 1)],
      ] as const) {
        const res = await call(gw.url, 'POST', path, { token: apiKey, ...multipartForm({ model: 'stt-local', [name]: value }, Buffer.from('RIFF0000WAVE')) });
        assert.equal(res.status, 400, `${path} ${name}: ${res.text.slice(0, 300)}`);
        assert.equal(res.body.error.code, 'invalid_request', name);
        assert.equal(res.body.error.param, name);
        assert.match(res.body.error.message, new RegExp(`'${name}' is longer than 64 KiB`));
        assert.ok(res.text.length < 1000, `the refusal echoes ${res.text.length} characters`);
      }
    }
    // 64 KiB itself is not over it (the form then fails on its audio, not on the field).
    const full = await call(gw.url, 'POST', ROUTES[0]!, {
      token: apiKey,
      ...multipartForm({ model: 'stt-local', prompt: 'p'.repeat(64 * 1024) }, Buffer.from('RIFF0000WAVE')),
    });
    assert.notEqual(full.body.error?.param, 'prompt', full.text.slice(0, 300));
  });

  it('logs an upload whose connection closed mid-body at info, not as a 500', async () => {
    const head = (path: string) =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${apiKey}\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 100000\r\n\r\n` +
      `--x\r\ncontent-disposition: form-data; name="file"; filename="a.wav"\r\n\r\n${'A'.repeat(1000)}`;
    const seen = lines.length;
    // Too slow: Node's request timeout answers 408 and closes the connection.
    const slow = await exchange(gw.url, head(ROUTES[0]!), { waitMs: 5000 });
    assert.equal(slow.status, 408, slow.raw.slice(0, 200));
    // The client leaves mid-body.
    const socket = await openSocket(gw.url);
    socket.write(head(ROUTES[1]!));
    await sleep(300);
    socket.destroy();
    const aborted = () => lines.slice(seen).filter((l) => l.msg?.startsWith('upload aborted'));
    for (let i = 0; i < 50 && aborted().length < 2; i++) await sleep(100);
    assert.equal(aborted().length, 2, JSON.stringify(lines.slice(seen)));
    for (const l of aborted()) {
      assert.equal(l.level, 30);
      assert.match(String(l.request_id), /^req_[0-9a-f]{32}$/);
    }
    assert.deepEqual(
      lines.slice(seen).filter((l) => l.level >= 50),
      [],
      'nothing logged as an error',
    );
  });
});
