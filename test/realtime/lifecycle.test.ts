// A realtime session through the gateway's lifecycle: counted in /metrics and visible to operators
// (GET /admin/actors/realtime-session/{id}) while open; at shutdown the client gets
// transcription_session.done and a 1001 close, and the audio is billed once before the store closes;
// the `api_key` query value never reaches the log.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../../src/logger.ts';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway } from '../helper.ts';
import { connect, encode, localPrice, skipSpeech, speech16k } from './helpers.ts';

describe('realtime session lifecycle', { skip: skipSpeech }, () => {
  it('is counted and visible while open; shutdown closes it with done/1001 and bills it once; the api_key is not logged', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    let gw = await startTestGateway({}, { logger: createLogger('trace', sink) });
    const dir = gw.dir;
    try {
      const u = await signup(gw.url);
      const key = (await createKey(gw.url, u.token)).api_key;
      await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100 } });
      const before = (await call(gw.url, 'GET', '/portal/wallet', { token: u.token })).body.balance_microcents as number;
      const c = await connect(gw.url, { model: 'stt-local', api_key: key });
      const id = (await c.next('transcription_session.created')).session.id;
      c.ws.send(encode(speech16k(0.5, 0.5), 'pcm_s16le')); // 3.99 s
      await c.next('conversation.item.input_audio_transcription.completed');
      const metrics = await fetch(`${gw.metricsUrl}/metrics`).then((r) => r.text());
      assert.match(metrics, /^gateway_realtime_sessions 1$/m);
      const view = await call(gw.url, 'GET', `/admin/actors/realtime-session/${id}`, { token: ADMIN_TOKEN });
      assert.equal(view.status, 200);
      assert.deepEqual(view.body.value, { open: 'streaming' });
      assert.equal(view.body.context.model, 'stt-local');

      await gw.close();
      await c.next('transcription_session.done');
      assert.equal(await c.closed, 1001);
      gw = await startTestGateway({}, { dir });
      const after = (await call(gw.url, 'GET', '/portal/wallet', { token: u.token })).body.balance_microcents as number;
      assert.equal(before - after, localPrice(4));
      const closed = (await call(gw.url, 'GET', `/admin/actors/realtime-session/${id}`, { token: ADMIN_TOKEN })).body;
      assert.equal(closed.status, 'done');
      assert.equal(closed.context.ending.reason, 'shutdown');
      assert.equal(closed.context.chargedSeconds, 4);

      const secret = key.slice('sk-live-'.length);
      assert.ok(
        lines.some((l) => l.includes('realtime upgrade') && l.includes('api_key=[Redacted]')),
        'the upgrade is logged, its key cut',
      );
      assert.ok(!lines.some((l) => l.includes(secret)), 'no log line holds the key');
    } finally {
      await gw.destroy();
    }
  });
});
