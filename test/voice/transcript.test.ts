// A long call never outgrows its actor (issue 39, 10a): the transcript lives in `voice_turns`, the
// call's snapshot keeps counts. On a gateway whose actor snapshots are limited to 12 KiB (the audit's
// setting; the default is 64 KiB), over real sockets with the simulator carrier: a 200-turn call of
// long LLM replies (keys pressed by the callee, each `#` answered by the fake LLM with ~0.9 KB of
// text, spoken by a fake TTS that returns a few milliseconds of audio, so 200 turns take seconds)
// completes, is billed once and reads back whole; calls carrying 6 KB of metadata still time out
// ringing, answer, hang up and bill as any other. Before, all three were stuck: the event that
// grew the snapshot past the limit was dropped and the actor left memory.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, type TestGateway } from '../helper.ts';
import { FakeServer } from '../fakes/fake-server.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import type { ActorDoc } from '../../src/actors/record.ts';
import { carrierModel, ended, place, startVoiceGateway, voiceAccount, waitForCall, walletMicrocents, type VoiceAccount } from './helpers.ts';

const LIMIT = 12 * 1024;
const CYCLES = 50; // '1', '2', '#' and the agent's answer: 4 turns each, 200 in all
/** Four sentences, about 950 characters (an LLM's reply is said up to 1000). */
const LONG_REPLY = Array.from(
  { length: 4 },
  (_, i) =>
    `Sentence ${i + 1} of a long answer explains the account in detail, with its last payments, the fees charged this quarter, the standing instructions on it, the cards linked to it and what the bank will do next for you about all of them.`,
).join(' ');
/** 6 KB of metadata: twelve values of 500 characters. */
const METADATA = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${i}`, String(i % 10).repeat(500)]));

const CALLEES = [
  { to: '+919800000070', answer: 'answer', ring_ms: 100, steps: [{ silence_ms: 300 }, ...Array.from({ length: CYCLES }, () => ({ dtmf: '12#', gap_ms: 5 }))] },
  { to: '+919800000071', answer: 'no_answer', steps: [] },
  { to: '*', answer: 'answer', ring_ms: 100, steps: [] },
];

// The two tests run side by side (each with its own account and wallet): the ring timeout's 5 s are not waited after the long call.
describe('a long call never outgrows its actor (snapshots limited to 12 KiB)', { concurrency: true }, () => {
  let gw: TestGateway;
  let tts: FakeServer;
  let llm: Awaited<ReturnType<typeof startOpenAIUpstream>>;
  let acc: VoiceAccount;
  let other: VoiceAccount;
  const put = (id: string, body: unknown) => call(gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body });
  const stored = async (id: string) => (await gw.store.collection<ActorDoc>('actors').findOne({ _id: `voice-call:${id}` }))!;

  before(async () => {
    // 2 ms of 24 kHz PCM whatever the text: an agent's turn plays in a few frames.
    tts = await FakeServer.start(async (x) => {
      x.res.writeHead(200, { 'content-type': 'application/octet-stream' });
      x.res.end(Buffer.alloc(96));
    });
    llm = await startOpenAIUpstream();
    gw = await startVoiceGateway(CALLEES, { actors: { maxSnapshotBytes: LIMIT } });
    const route = (url: string) => ({ provider: 'openai', base_url: `${url}/v1`, api_key: 'k', upstream_model: 'm' });
    const tts1 = {
      type: 'tts',
      owned_by: 'test',
      voices: ['en-us'],
      languages: ['en-IN'],
      max_input_chars: 4096,
      pricing: { cents_per_1k_chars: 0.1 },
      routes: [route(tts.url)],
    };
    assert.equal((await put('tts-fast', tts1)).status, 201);
    assert.equal(
      (await put('chat-test', { type: 'llm', owned_by: 'test', pricing: { input_cents_per_mtok: 1, output_cents_per_mtok: 1 }, routes: [route(llm.url)] }))
        .status,
      201,
    );
    // The helpers' voice model on the simulator, speaking through the fake TTS.
    const voice = { ...carrierModel({ provider: 'simulator' }), tts_model: 'tts-fast' };
    assert.equal((await put('voice-fast', voice)).status, 201);
    [acc, other] = await Promise.all([voiceAccount(gw, 1000), voiceAccount(gw, 1000)]);
  });
  after(async () => {
    await gw?.destroy();
    await tts?.close();
    await llm?.close();
  });

  /** The account's wallet settles to exactly the call's cost: charged once, nothing left held. */
  async function assertBilledOnce(who: VoiceAccount, before: number, c: { cost_cents: number; billed_seconds: number }): Promise<void> {
    await new Promise((r) => setTimeout(r, 300));
    const wallet = (await call(gw.url, 'GET', '/portal/wallet', { token: who.session })).body;
    assert.equal(wallet.held_cents, 0, 'nothing left held');
    assert.equal(before - wallet.balance_microcents, Math.round(c.cost_cents * 1e6), 'charged exactly the call, once');
    assert.equal(c.cost_cents, (c.billed_seconds * 6) / 60);
  }

  it('200 turns of long LLM replies: the call completes, billed once, its transcript whole; its snapshot stays a few KB', async () => {
    llm.next(...Array.from({ length: CYCLES }, () => ({ reply: LONG_REPLY })));
    const before = await walletMicrocents(gw, acc.session);
    const res = await place(gw, acc.key, {
      model: 'voice-fast',
      to: '+919800000070',
      agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Be thorough.' },
      first_message: { mode: 'wait_for_callee' },
      idle: { prompt_after_ms: 60_000 },
    });
    assert.equal(res.status, 202, res.text);
    const id = res.body.id as string;
    const live = await waitForCall(gw, acc.key, id, (c) => c.transcript?.length >= 4 * CYCLES || ended(c), 60_000);
    assert.equal(live.status, 'in_progress', JSON.stringify({ ...live, transcript: live.transcript?.length }));
    const agent = live.transcript.filter((t: { role: string }) => t.role === 'agent');
    assert.equal(agent.length, CYCLES);
    for (const t of agent) assert.deepEqual([t.text, t.heard_text], [LONG_REPLY, LONG_REPLY]);
    const snapshot = (await stored(id)).snapshot!;
    assert.ok(Buffer.byteLength(snapshot) < 8 * 1024, `the live call's snapshot is ${Buffer.byteLength(snapshot)} bytes`);

    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${id}/hangup`, { token: acc.key })).status, 200);
    const c = await waitForCall(gw, acc.key, id, ended);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'api_hangup']);
    assert.equal(c.transcript.length, 4 * CYCLES);
    assert.deepEqual([c.transcript_truncated, c.metrics.turns, c.metrics.turns_dropped], [false, 200, 0]);
    assert.ok(Buffer.byteLength(JSON.stringify(c.transcript)) > 2 * 50 * LONG_REPLY.length, 'the transcript carries every reply, twice');
    assert.ok(Buffer.byteLength((await stored(id)).snapshot!) < 8 * 1024);
    await assertBilledOnce(acc, before, c);
  });

  it('6 KB of metadata: a call rings out at its timeout and one answered hangs up and bills, as any other', async () => {
    const before = await walletMicrocents(gw, other.session);
    const unanswered = await place(gw, other.key, { model: 'voice-fast', to: '+919800000071', ring_timeout_seconds: 5, metadata: METADATA });
    const answered = await place(gw, other.key, { model: 'voice-fast', to: '+919800000072', metadata: METADATA });
    assert.deepEqual([unanswered.status, answered.status], [202, 202], unanswered.text + answered.text);
    const id = answered.body.id as string;
    // The greeting (the demo pack's, through the fake TTS) is heard: the media stream is attached.
    const live = await waitForCall(gw, other.key, id, (c) => c.transcript?.length > 0 || ended(c), 10_000);
    assert.deepEqual([live.status, live.transcript[0]?.response_id], ['in_progress', 'GEN.GREETING'], JSON.stringify(live));
    assert.deepEqual(live.metadata, METADATA);
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${id}/hangup`, { token: other.key })).status, 200);
    const c = await waitForCall(gw, other.key, id, ended);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'api_hangup']);
    assert.ok(c.billed_seconds >= 1, String(c.billed_seconds));
    const rang = await waitForCall(gw, other.key, unanswered.body.id, ended, 10_000);
    assert.deepEqual([rang.status, rang.end_reason, rang.billed_seconds, rang.cost_cents], ['no_answer', 'ring_timeout', 0, 0], JSON.stringify(rang));
    assert.ok(rang.ended_at - rang.created_at <= 6, `ended ${rang.ended_at - rang.created_at} s after its creation`);
    await assertBilledOnce(other, before, c);
  });
});
