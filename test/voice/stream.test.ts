// The carriers' media stream endpoint against hostile peers, over real sockets: an upgrade for a
// call that is not live here is refused in the error envelope; a socket that presents a wrong token
// (before the carrier's own stream, or beside it), sends junk or floods is closed 1008 and changes
// nothing about the call; DTMF from the callee becomes transcript turns.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { call, type TestGateway } from '../helper.ts';
import { ended, place, startVoiceGateway, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';

const BURST = Array.from({ length: 7 }, (_, i) => '0123456789*#0123456789*#01234567'.slice(i % 3) + '#'.repeat(i % 3));
const CALLEES = [
  { to: '+919800000020', answer: 'answer', ring_ms: 1500, steps: [{ wait_agent: 'done', ms: 100 }, { dtmf: '12' }, { silence_ms: 400 }, { hangup: true }] },
  { to: '+919800000021', answer: 'answer', ring_ms: 100, stream: false, steps: [] },
  // A burst of 224 keys, 10 ms apart: more turns than the transcript keeps.
  { to: '+919800000022', answer: 'answer', ring_ms: 100, steps: [...BURST.map((dtmf) => ({ dtmf, gap_ms: 10 })), { silence_ms: 500 }, { hangup: true }] },
  { to: '*', answer: 'answer', ring_ms: 100, steps: [] },
];

const streamUrl = (gw: TestGateway, id: string) => `${gw.url.replace(/^http/, 'ws')}/v1/voice/calls/${id}/stream`;

/** Opens a socket; resolves with how it ended: the refused upgrade's status and body, or the close code. */
function peer(url: string, frames: (ws: WebSocket) => void): Promise<{ status?: number; body?: string; code?: number }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    ws.on('error', () => undefined);
    ws.on('open', () => frames(ws));
    ws.on('close', (code) => resolve({ code }));
  });
}

const start = (token: string) =>
  JSON.stringify({
    event: 'start',
    streamSid: 'MZevil',
    start: { streamSid: 'MZevil', callSid: 'CAevil', customParameters: { token }, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } },
  });

describe('voice media streams: hostile peers', () => {
  let gw: TestGateway;
  let acc: VoiceAccount;
  before(async () => {
    gw = await startVoiceGateway(CALLEES, { voice: { mediaTimeoutMs: 1500, simulator: { callees: CALLEES } } });
    acc = await voiceAccount(gw);
  });
  after(() => gw.destroy());

  it('refuses the upgrade for a call that is not live here, in the error envelope', async () => {
    const res = await peer(streamUrl(gw, 'call_000000000000000000000000'), () => undefined);
    assert.equal(res.status, 404);
    assert.equal(JSON.parse(res.body!).error.code, 'not_found');
  });

  it('a wrong token before the carrier connects is closed 1008; the carrier then streams, DTMF becomes turns', async () => {
    const placed = await place(gw, acc.key, { to: '+919800000020' });
    const id = placed.body.id as string;
    // While it rings: an attacker who guessed the call id, with a wrong token, then junk.
    assert.equal((await peer(streamUrl(gw, id), (ws) => ws.send(start('not-the-token')))).code, 1008);
    // Media before `start`, then junk: refused frame by frame, closed past the budget.
    const junk = (ws: WebSocket) => {
      ws.send(JSON.stringify({ event: 'media', media: { payload: 'AAAA' } }));
      for (let i = 0; i < 25; i++) ws.send('not json');
    };
    assert.equal((await peer(streamUrl(gw, id), junk)).code, 1008);
    const c = await waitForCall(gw, acc.key, id, ended, 30_000);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
    assert.equal(c.transcript[0].response_id, 'GEN.GREETING');
    assert.deepEqual(
      c.transcript.filter((t: { dtmf?: string }) => t.dtmf).map((t: { dtmf: string }) => t.dtmf),
      ['1', '2'],
    );
    assert.deepEqual([c.transcript_truncated, c.metrics.turns_dropped], [false, 0]);
  });

  it('a burst of DTMF keys fills the transcript: its first 200 turns are kept, the call says it was truncated and by how many', async () => {
    const placed = await place(gw, acc.key, { to: '+919800000022' });
    const c = await waitForCall(gw, acc.key, placed.body.id, ended, 30_000);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify({ ...c, transcript: c.transcript.length }));
    assert.equal(c.transcript.length, 200);
    assert.equal(c.transcript_truncated, true);
    const keyed = BURST.join('');
    const kept = c.transcript.filter((t: { dtmf?: string }) => t.dtmf).map((t: { dtmf: string }) => t.dtmf);
    assert.equal(kept.join(''), keyed.slice(0, kept.length), 'the first keys are the ones kept, in order');
    assert.ok(c.metrics.turns_dropped >= keyed.length - kept.length, JSON.stringify(c.metrics));
    assert.equal(c.metrics.turns, 200 + c.metrics.turns_dropped);
  });

  it('an answered call whose media stream never opens ends media_timeout, billed for the answered seconds only', async () => {
    const placed = await place(gw, acc.key, { to: '+919800000021' });
    const c = await waitForCall(gw, acc.key, placed.body.id, ended);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'media_timeout'], JSON.stringify(c));
    assert.ok(c.billed_seconds >= 1 && c.billed_seconds <= 3, String(c.billed_seconds));
    assert.deepEqual(c.transcript, []);
  });

  it('the silence watchdog prompts, then ends a call nobody speaks on: silence_timeout', async () => {
    const placed = await place(gw, acc.key, { to: '+919800000099', idle: { prompt_after_ms: 1000, max_prompts: 1 } });
    const c = await waitForCall(gw, acc.key, placed.body.id, ended, 30_000);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'silence_timeout'], JSON.stringify(c));
    assert.deepEqual(
      c.transcript.map((t: { response_id?: string }) => t.response_id),
      ['GEN.GREETING', 'GEN.CLARIFY'],
    );
  });

  it("a second stream beside the carrier's is closed and the call goes on; a flood is closed 1008", async () => {
    const placed = await place(gw, acc.key, { to: '+919800000099' });
    const id = placed.body.id as string;
    await waitForCall(gw, acc.key, id, (c) => c.status === 'in_progress');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await peer(streamUrl(gw, id), (ws) => ws.send(start('not-the-token')))).code, 1008);
    assert.equal(
      (
        await peer(streamUrl(gw, id), (ws) => {
          for (let i = 0; i < 300; i++) ws.send(JSON.stringify({ event: 'connected' }));
        })
      ).code,
      1008,
    );
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await call(gw.url, 'GET', `/v1/voice/calls/${id}`, { token: acc.key })).body.status, 'in_progress');
    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${id}/hangup`, { token: acc.key })).status, 200);
    const c = await waitForCall(gw, acc.key, id, ended);
    assert.equal(c.end_reason, 'api_hangup');
  });
});

describe('voice media streams: sockets that never start, or outlive their call', () => {
  let gw: TestGateway;
  let acc: VoiceAccount;
  before(async () => {
    // The default media timeout (10 s): the start deadline is then its ceiling, 5 s.
    gw = await startVoiceGateway(CALLEES);
    acc = await voiceAccount(gw);
  });
  after(() => gw.destroy());

  /** How a socket ended and when (ms after it opened); code undefined: still open after `waitMs`. */
  const timedPeer = (url: string, frames: (ws: WebSocket) => void, waitMs: number) =>
    new Promise<{ code?: number; reason?: string; ms: number }>((resolve) => {
      const ws = new WebSocket(url);
      let openedAt = Date.now();
      const timer = setTimeout(() => {
        ws.terminate();
        resolve({ ms: Date.now() - openedAt });
      }, waitMs);
      ws.on('error', () => undefined);
      ws.on('open', () => {
        openedAt = Date.now();
        frames(ws);
      });
      ws.on('close', (code, reason) => {
        clearTimeout(timer);
        resolve({ code, reason: String(reason), ms: Date.now() - openedAt });
      });
    });

  it('20 sockets that send no valid start are closed 1008 after about 5 s; the call goes on; a socket whose call ended is closed 1001', async () => {
    const placed = await place(gw, acc.key, { to: '+919800000099' });
    const id = placed.body.id as string;
    await waitForCall(gw, acc.key, id, (c) => c.status === 'in_progress');
    const quiet = (i: number) => (ws: WebSocket) => {
      if (i % 3 === 1) ws.send(JSON.stringify({ event: 'connected' }));
      if (i % 3 === 2) ws.send(JSON.stringify({ event: 'media', media: { payload: 'AAAA' } })); // before any start: refused, kept under the budget
    };
    const silent = await Promise.all(Array.from({ length: 20 }, (_, i) => timedPeer(streamUrl(gw, id), quiet(i), 9000)));
    for (const s of silent) {
      assert.deepEqual([s.code, s.reason], [1008, 'no start frame in time'], JSON.stringify(s));
      assert.ok(s.ms >= 4500 && s.ms < 7000, `closed after ${s.ms} ms`);
    }
    assert.equal((await call(gw.url, 'GET', `/v1/voice/calls/${id}`, { token: acc.key })).body.status, 'in_progress');
    // One more, silent, then the call ends: it is closed with the call, well before its deadline.
    const last = timedPeer(streamUrl(gw, id), () => undefined, 9000);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${id}/hangup`, { token: acc.key })).status, 200);
    const closed = await last;
    assert.deepEqual([closed.code, closed.reason], [1001, 'call ended'], JSON.stringify(closed));
    assert.ok(closed.ms < 4000, `closed after ${closed.ms} ms`);
  });
});
