// Pipelining: valid requests followed by a malformed one in the same write. The valid ones are
// answered, in order, before the malformed one is refused (400, Connection: close), so a client sees
// the answer to every request whose effect happened: the key it created, the speech it is charged for.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { exchange, responsesOf } from './raw-socket.ts';

const MALFORMED = 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n';
const post = (path: string, token: string, body: object) => {
  const json = JSON.stringify(body);
  return `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
};
const hasEspeak = execFileSync('sh', ['-c', 'command -v espeak-ng || true']).toString().trim() !== '';

describe('a malformed request pipelined behind valid ones', () => {
  let gw: TestGateway;
  let session: string;
  let apiKey: string;

  before(async () => {
    gw = await startTestGateway();
    const s = await signup(gw.url);
    session = s.token;
    apiKey = (await createKey(gw.url, session)).api_key;
    const top = await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100 } });
    assert.equal(top.status, 201, top.text);
  });
  after(async () => gw?.destroy());

  it('answers the valid requests first (the keys they created), then refuses the malformed one and closes', async () => {
    const res = await exchange(
      gw.url,
      post('/portal/keys', session, { name: 'pipelined-1' }) + post('/portal/keys', session, { name: 'pipelined-2' }) + MALFORMED,
    );
    assert.ok(res.closed, 'the server closed the connection');
    const [first, second, refusal, ...more] = responsesOf(res.raw);
    assert.equal(first?.status, 201, res.raw.slice(0, 300));
    assert.equal(second?.status, 201, res.raw.slice(0, 600));
    assert.equal(refusal?.status, 400, res.raw);
    assert.equal(more.length, 0);
    assert.equal(refusal.headers.connection, 'close');
    assert.equal(JSON.parse(refusal.body).error.code, 'invalid_request');
    const created = [JSON.parse(first.body), JSON.parse(second.body)];
    assert.deepEqual(
      created.map((k) => k.name),
      ['pipelined-1', 'pipelined-2'],
    );
    assert.match(created[0].api_key, /^sk-live-/);
    // The keys the client was told of are the ones that exist.
    const listed = (await call(gw.url, 'GET', '/portal/keys', { token: session })).body.data as { id: number; name: string }[];
    for (const k of created)
      assert.ok(
        listed.some((l) => l.id === k.id && l.name === k.name),
        `key ${k.name} listed`,
      );
  });

  it('a speech call answered in full before the refusal is charged as ok, not client_closed', { skip: hasEspeak ? false : 'needs espeak-ng' }, async () => {
    const input = 'Pipelined speech is answered in full.';
    const res = await exchange(gw.url, post('/v1/audio/speech', apiKey, { model: 'tts-local', input, voice: 'en-us', response_format: 'pcm' }) + MALFORMED, {
      waitMs: 15_000,
    });
    assert.ok(res.closed, 'the server closed the connection');
    const [speech, refusal] = responsesOf(res.raw);
    assert.equal(speech?.status, 200, res.raw.slice(0, 300));
    assert.equal(speech.headers['content-type'], 'audio/L16');
    assert.ok(speech.body.length > 24_000, `${speech.body.length} bytes of audio`);
    assert.equal(refusal?.status, 400);
    let records: { request_id: string; status: string; characters: number }[] = [];
    for (let i = 0; i < 50; i++) {
      records = (await call(gw.url, 'GET', '/portal/usage/records?limit=100', { token: session })).body.data;
      if (records.some((r) => r.request_id === speech.headers['x-request-id'])) break;
      await sleep(100);
    }
    const record = records.find((r) => r.request_id === speech.headers['x-request-id']);
    assert.equal(record?.status, 'ok', JSON.stringify(records));
    assert.equal(record.characters, [...input].length);
  });
});
