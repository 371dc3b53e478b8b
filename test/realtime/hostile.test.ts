// Hostile clients against the realtime socket: a thousand idle sockets (the instance-wide socket
// cap refuses past it, 503 before the upgrade; every slot comes back once they close), stt-local sessions past the local-engine cap (503),
// a flood of audio far faster than real time (held back: the audio taken stays within the burst and
// the rate factor; its pings and pongs are still answered, so the liveness check does not cut it),
// and a flood of junk frames (error frames, then close 1008 past
// the budget); each slot comes back when its socket closes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, call } from '../helper.ts';
import { closedSession, connect, fundedGateway, refusal, skipSpeech, type Client, type Funded } from './helpers.ts';

/** A cloud model (utterance mode): an idle socket on it calls nothing upstream. */
async function addIdleModel(f: Funded): Promise<void> {
  const res = await call(f.gw.url, 'PUT', '/admin/models/stt-idle', {
    token: ADMIN_TOKEN,
    body: {
      type: 'stt',
      owned_by: 'acme',
      streaming: true,
      pricing: { cents_per_minute: 0.01 },
      routes: [{ provider: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key: 'k', upstream_model: 'whisper-1' }],
    },
  });
  assert.ok(res.status < 300, res.text);
}

/**
 * gateway_realtime_sessions, from /metrics. A poll: a read whose kept-alive socket the metrics
 * listener closed meanwhile (its keep-alive timeout passes while a thousand sessions bill at once
 * and the loop is busy) is read again on a new one.
 */
async function openSessions(f: Funded): Promise<number> {
  const read = async () => (await fetch(`${f.gw.metricsUrl}/metrics`)).text();
  const text = await read().catch(() => new Promise((r) => setTimeout(r, 100)).then(read));
  return Number(/^gateway_realtime_sessions (\d+)$/m.exec(text)?.[1]);
}

/**
 * Waits until `read()` is `target`, as long as it keeps moving: a thousand sessions opening or billing
 * at once take a time that grows with the machine's load, so only a stall (no change for `stallMs`)
 * fails.
 */
async function untilSettled(read: () => number | Promise<number>, target: number, what: string, stallMs = 30_000): Promise<void> {
  let last = await read();
  for (let movedAt = Date.now(); last !== target; ) {
    await new Promise((r) => setTimeout(r, 100));
    const now = await read();
    if (now !== last) movedAt = Date.now();
    assert.ok(Date.now() - movedAt < stallMs, `${what}: stuck at ${now} for ${stallMs / 1000} s`);
    last = now;
  }
}

// Its own gateway, with the default ping interval and an idle timeout longer than the test: the
// sockets are idle on purpose, and under load (client and gateway share this process) opening a
// thousand of them can take longer than the default 30 s idle timeout, which would end the first
// ones and free their slots before the cap is tested.
describe('realtime socket: a thousand idle sockets', { skip: skipSpeech }, () => {
  let f: Funded;
  before(async () => {
    f = await fundedGateway(
      { http: { maxConnectionsPerAddress: 5000, maxConnections: 5000 }, realtime: { maxSockets: 1000, maxSocketsPerKey: 1000, idleTimeoutMs: 600_000 } },
      1000,
    );
    await addIdleModel(f);
  });
  after(async () => f?.gw.destroy());

  it('are held; the next is refused 503 before the upgrade; a closed one frees its slot; all come back once closed', async () => {
    const open: Client[] = [];
    try {
      for (let i = 0; i < 1000; i += 50) {
        open.push(...(await Promise.all(Array.from({ length: 50 }, () => connect(f.gw.url, { model: 'stt-idle', api_key: f.apiKey })))));
      }
      // Each session is spawned (a durable write) before its `created`: they queue behind each other.
      await untilSettled(() => open.filter((c) => c.of('transcription_session.created').length > 0).length, 1000, 'sessions created');
      assert.equal(await openSessions(f), 1000);
      const over = await refusal(connect(f.gw.url, { model: 'stt-idle', api_key: f.apiKey }));
      assert.equal(over.status, 503);
      assert.equal(over.body.error.code, 'too_many_connections');
      assert.equal(over.headers['retry-after'], '1');
      const first = open.shift()!;
      const id = (await first.next('transcription_session.created')).session.id;
      first.ws.close();
      await closedSession(f.gw, id);
      const again = await connect(f.gw.url, { model: 'stt-idle', api_key: f.apiKey });
      open.push(again);
      await again.next('transcription_session.created');
    } finally {
      for (const c of open) c.ws.close();
      await Promise.all(open.map((c) => c.closed));
    }
    // Each slot comes back when its session has billed; a thousand bill at once (≈1 s here unloaded,
    // far longer on a loaded machine).
    await untilSettled(() => openSessions(f), 0, 'open sessions');
    const c = await connect(f.gw.url, { model: 'stt-idle', api_key: f.apiKey });
    await c.next('transcription_session.created');
    c.ws.close();
    await c.closed;
  });
});

describe('realtime socket: hostile clients', { skip: skipSpeech }, () => {
  let f: Funded;
  before(async () => {
    f = await fundedGateway({
      realtime: { maxLocalEngines: 2, maxBadFrames: 50, burstSeconds: 1, rateFactor: 2, pingIntervalMs: 1000, maxBacklogBytes: 262_144 },
    });
    await addIdleModel(f);
  });
  after(async () => f?.gw.destroy());

  it('stt-local sessions past the local-engine cap are refused 503 before the upgrade', async () => {
    const a = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    const b = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    const idA = (await a.next('transcription_session.created')).session.id;
    await b.next('transcription_session.created');
    const third = await refusal(connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey }));
    assert.equal(third.status, 503);
    assert.equal(third.body.error.code, 'model_unavailable');
    // A cloud model is not held back by the engines.
    const cloud = await connect(f.gw.url, { model: 'stt-idle', api_key: f.apiKey });
    await cloud.next('transcription_session.created');
    a.ws.close();
    await closedSession(f.gw, idA);
    const c = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    await c.next('transcription_session.created');
    for (const x of [b, c, cloud]) x.ws.close();
    await Promise.all([b.closed, c.closed, cloud.closed]);
  });

  it('a client flooding audio still has its pings answered at once and answers ours: not cut while its audio waits for the rate', async () => {
    const c = await connect(f.gw.url, { model: 'stt-idle', api_key: f.apiKey, sample_rate: '8000', encoding: 'mulaw' });
    const id = (await c.next('transcription_session.created')).session.id;
    const second = Buffer.alloc(8000, 0xff);
    for (let i = 0; i < 30; i++) c.ws.send(second); // 30 s at once: ≈15 s to take at 2× after the 1 s burst
    await new Promise((r) => setTimeout(r, 200));
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      await new Promise<void>((resolve) => {
        c.ws.once('pong', () => resolve());
        c.ws.once('close', () => resolve());
        setTimeout(resolve, 3000).unref();
        c.ws.ping();
      });
      const took = Date.now() - t0;
      assert.ok(took < 500, `pong after ${took} ms behind the audio`);
      await new Promise((r) => setTimeout(r, 1000)); // a ping interval of the gateway's
    }
    assert.equal(c.closeCode, null, 'cut by the liveness check while its audio waited');
    const progress = (await f.gw.runtime.get('realtime-session', id)) as { context: { audioMs: number } };
    assert.ok(progress.context.audioMs < 20_000, `took ${progress.context.audioMs} ms of audio`);
    c.ws.close();
    const view = await closedSession(f.gw, id);
    assert.ok(view.context.audioMs < 30_000, 'audio waiting when the client closed is not taken');
  });

  it('an audio flood far faster than real time is paused, not taken: the audio received stays within burst + rate × time', async () => {
    const c = await connect(f.gw.url, { model: 'stt-idle', api_key: f.apiKey, sample_rate: '8000', encoding: 'mulaw' });
    const id = (await c.next('transcription_session.created')).session.id;
    const t0 = Date.now();
    const second = Buffer.alloc(8000, 0xff); // 1 s of μ-law silence
    for (let i = 0; i < 60; i++) c.ws.send(second); // a minute of audio at once
    await new Promise((r) => setTimeout(r, 2500));
    // What the session took so far (its last progress checkpoint, at most a second old).
    const progress = (await f.gw.runtime.get('realtime-session', id)) as { context: { audioMs: number } };
    const elapsedS = (Date.now() - t0) / 1000;
    const taken = progress.context.audioMs / 1000;
    // burst 1 s + 2× real time, plus the frame taken before the pause: far from the 60 s sent.
    assert.ok(taken <= 1 + 2 * elapsedS + 1, `took ${taken} s of audio in ${elapsedS} s`);
    assert.ok(taken >= 1, `took ${taken} s`);
    // Past the backlog's 256 KiB the socket is paused (its pongs behind its audio): not held against it.
    assert.equal(c.closeCode, null, 'cut while paused by the gateway');
    // A client that drops the connection meanwhile is billed for what was taken.
    c.ws.terminate();
    const view = await closedSession(f.gw, id);
    assert.ok(view.context.audioMs / 1000 <= 1 + 2 * ((Date.now() - t0) / 1000) + 1);
    assert.equal(view.context.chargedSeconds, Math.ceil(view.context.audioMs / 1000 - 1e-9));
  });

  it('a junk flood gets error frames, then close 1008 past the budget', async () => {
    const c = await connect(f.gw.url, { model: 'stt-idle', api_key: f.apiKey });
    const id = (await c.next('transcription_session.created')).session.id;
    const junk = [
      'not json',
      '[]',
      '{}',
      '{"type":42}',
      '{"type":"nope"}',
      '{"type":"input_audio_buffer.append","audio":"***"}',
      '\u0000\u0001',
      '{"type":"transcription_session.update","session":{"voice":"x"}}',
    ];
    for (let i = 0; i < 200; i++) c.ws.send(junk[i % junk.length]!);
    assert.equal(await c.closed, 1008);
    assert.ok(c.of('error').length >= 50, `${c.of('error').length} error frames`);
    assert.ok(c.of('error').every((e) => e.error.code === 'invalid_request'));
    await closedSession(f.gw, id);
  });
});
