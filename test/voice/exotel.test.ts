// The exotel carrier against a fake Exotel (test/fakes/exotel.ts) over real loopback sockets: the
// connect API's form (Basic auth, the stream URL with the call's id and token as the custom
// parameters Exotel hands the bot), unsigned status callbacks authenticated by the call's secret
// and delivered twice and out of order, the Voicebot stream (PCM16, 100 ms chunks, snake_case)
// opened by the fake and driven by the simulator's scripted callees, speaking espeak-ng's speech
// to a scripted stt upstream. The intent agent's turn, billing, the unanswered ends, forged
// callbacks, a stream with a wrong token, barge-in with `clear`, Exotel's payload sizes, an LLM
// agent's streamed reply (sentences added to the playback while it plays) in Exotel's chunks, the
// credit guard's low-balance wording, and what Exotel's call details say a call lasted.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { pino } from 'pino';
import { ADMIN_TOKEN, call, type TestGateway } from '../helper.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import type { FakeServer } from '../fakes/fake-server.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import { exotelCarrier } from '../../src/providers/exotel/voice.ts';
import {
  assertBargedIn,
  assertDisputeCall,
  assertCreditGuarded,
  ended,
  localSpeech,
  place,
  startVoiceGateway,
  voiceAccount,
  waitForCall,
  walletMicrocents,
  type VoiceAccount,
} from './helpers.ts';
import { CALLEES, putScriptedVoice, ScriptedStt } from './simulated.ts';

const ROUTE = { provider: 'exotel', account_sid: 'acme1', api_key: 'exo-key', api_token: 'exo-token', from: '+918047491899' };

describe('voice calls through a (fake) Exotel', () => {
  let gw: TestGateway;
  let exotel: FakeExotel;
  let stt: ScriptedStt;
  let llm: FakeServer;
  let acc: VoiceAccount;
  let speaker: VoiceAccount;
  before(async () => {
    stt = await ScriptedStt.start();
    // The callees speak espeak-ng's speech, as 8 kHz PCM16 from the gateway's own tts-local.
    const speak = (input: string, voice: string) => localSpeech(gw.url, speaker.key, input, voice);
    exotel = await FakeExotel.start({ accountSid: ROUTE.account_sid, apiKey: ROUTE.api_key, apiToken: ROUTE.api_token, callees: CALLEES as never, speak });
    // A short credit floor: the credit guard's call lasts seconds, not a minute.
    gw = await startVoiceGateway([], { voice: { mediaTimeoutMs: 10_000, minAffordableSeconds: 10, simulator: { callees: [] } } });
    await putScriptedVoice(gw.url, stt, 'voice-exotel', [{ ...ROUTE, base_url: exotel.url }]);
    llm = await startOpenAIUpstream();
    const chat = {
      type: 'llm',
      owned_by: 'test',
      pricing: { input_cents_per_mtok: 1, output_cents_per_mtok: 1 },
      routes: [{ provider: 'openai', base_url: `${llm.url}/v1`, upstream_model: 'gpt-test' }],
    };
    assert.equal((await call(gw.url, 'PUT', '/admin/models/chat-test', { token: ADMIN_TOKEN, body: chat })).status, 201);
    acc = await voiceAccount(gw, 1000);
    speaker = await voiceAccount(gw, 100);
  });
  after(async () => {
    await gw?.destroy();
    await exotel?.close();
    await stt?.server.close();
    await llm?.close();
  });

  const dial = (to: string, body: Record<string, unknown> = {}) => place(gw, acc.key, { model: 'voice-exotel', to, ...body });
  /** The carrier as the gateway builds it for the route (what a restarted gateway asks of an orphaned call). */
  const carrier = () =>
    exotelCarrier(
      { baseUrl: exotel.url, accountSid: ROUTE.account_sid, apiKey: ROUTE.api_key, apiToken: ROUTE.api_token, from: ROUTE.from },
      { callbackUrl: () => '', callbackToken: () => '', logger: pino({ level: 'silent' }) },
    );
  const connectOf = (id: string) => exotel.requests.find((r) => r.path.endsWith('/calls/connect') && r.form.get('customfield') === id)!;

  it('connects the call to the Voicebot stream; the intent agent runs its turns; callbacks twice and out of order; billed to the second once', async () => {
    stt.say('ATM did not give money but my account got debited', 'haan');
    const before = await walletMicrocents(gw, acc.session);
    const res = await dial('+919800000010');
    assert.equal(res.status, 202, res.text);
    const id = res.body.id as string;
    const c = await assertDisputeCall(gw, acc.key, id);
    assert.equal(c.transcript[4].heard_text, c.transcript[4].text, 'played to the end');
    assert.deepEqual(
      c.outcome.actions.map((a: { action: string }) => a.action),
      ['CREATE_DISPUTE'],
    );
    // Billed answer → end rounded up (assertDisputeCall) at 6 cents a minute (0.1 cent a second); the wallet lost exactly that.
    assert.equal(before - (await walletMicrocents(gw, acc.session)), c.billed_seconds * 100_000);
    assert.deepEqual(
      gw.events.filter((e) => e.fields.call_id === id).map((e) => e.event),
      ['call.answered', 'call.action', 'call.ended'],
      'once each, whatever the callbacks repeated',
    );

    // The connect API's form, as Exotel documents it (the fake refuses anything else); the ExoPhone
    // in the form Exotel writes it (the route's +918047491899 as 08047491899).
    const rest = connectOf(id);
    assert.equal(rest.authorization, `Basic ${Buffer.from('exo-key:exo-token').toString('base64')}`);
    assert.deepEqual(
      ['from', 'callerid', 'streamtype', 'timelimit'].map((f) => rest.form.get(f)),
      ['+919800000010', '08047491899', 'bidirectional', '600'],
    );
    const stream = new URL(rest.form.get('streamurl')!);
    assert.equal(`${stream.origin}${stream.pathname}`, `${gw.url.replace(/^http/, 'ws')}/v1/voice/calls/${id}/stream`);
    assert.equal(stream.searchParams.get('call_id'), id);
    assert.match(stream.searchParams.get('token')!, /^[A-Za-z0-9_-]{43}$/);
    const callback = new URL(rest.form.get('statuscallback')!);
    assert.equal(`${callback.origin}${callback.pathname}`, `${gw.url}/v1/voice/calls/${id}/callback/exotel`);
    assert.notEqual(callback.searchParams.get('token'), stream.searchParams.get('token'), 'the callback secret is not the stream token');
    assert.deepEqual(rest.form.getAll('statuscallbackevents[]'), ['ringing', 'answered', 'terminal']);
    assert.ok(exotel.callbacks.filter((x) => x.event === 'answered').length >= 2, 'repeated');
    assert.ok(exotel.callbacks.filter((x) => x.event === 'terminal').length >= 2, 'repeated');
    assert.ok(
      exotel.callbacks.every((x) => x.code === 200),
      JSON.stringify(exotel.callbacks),
    );

    // What went down the Voicebot stream: PCM16 in Exotel's sizes, marks to know what was heard.
    const sent = exotel.streams.get(id)!;
    assert.ok(sent.media.length >= 10, `${sent.media.length} media messages`);
    assert.deepEqual(
      sent.media.filter((bytes) => bytes % 320 !== 0 || bytes < 3200),
      [],
      'every payload a multiple of 320 bytes, at least 3,200',
    );
    assert.ok(sent.marks >= 3 && sent.clears === 0);

    // What Exotel says the call lasted (its details' duration once completed): what a gateway
    // restarted after kill -9 keeps as carrier_duration_seconds. Exotel's clock runs from its own
    // answer to its own end, whole seconds; ours from its answer's news or the stream's start,
    // whichever came first (a lagging `answered` callback no longer delays it), to its terminal
    // callback, bounded by the ConversationDuration it carries: within a second.
    const said = await carrier().duration!(exotel.sidOf(id)!);
    assert.ok(said !== null && Math.abs(said - c.duration_seconds) <= 1, `Exotel says ${said} s, the call lasted ${c.duration_seconds} s`);
  });

  // Calls that wait on timers (the ring timeout, the wallet's limit), side by side: each its own account's.
  describe('ends on a timer', { concurrency: true }, () => {
    it('busy and no answer (the ring timeout) end free', async () => {
      const before = await walletMicrocents(gw, acc.session);
      const [busy, silent] = await Promise.all([dial('+919800000002'), dial('+919800000003', { ring_timeout_seconds: 5 })]);
      const [b, n] = await Promise.all([waitForCall(gw, acc.key, busy.body.id, ended), waitForCall(gw, acc.key, silent.body.id, ended)]);
      assert.deepEqual([b.status, b.end_reason, b.billed_seconds, b.cost_cents], ['busy', 'dial_busy', 0, 0]);
      assert.deepEqual([n.status, n.end_reason, n.billed_seconds, n.cost_cents], ['no_answer', 'ring_timeout', 0, 0]);
      assert.equal(await walletMicrocents(gw, acc.session), before);
      // No hang-up API: what Exotel says of the call still ringing is asked (and logged).
      assert.ok(exotel.detailsAsked(silent.body.id), 'the call details of the call still ringing');
      assert.equal(await carrier().duration!(exotel.sidOf(busy.body.id)!), null, 'a busy call lasted nothing Exotel would say');
    });

    it("credit guard: the low-balance wording plays whole in Exotel's chunks (the answer told by callback), then insufficient_credit", async () => {
      const c = await assertCreditGuarded(gw, 'voice-exotel');
      const sent = exotel.streams.get(c.id)!;
      assert.deepEqual(
        sent.media.filter((bytes) => bytes % 320 !== 0 || bytes < 3200),
        [],
        'every payload a multiple of 320 bytes, at least 3,200',
      );
    });
  });

  it('refuses forged callbacks (403) and a stream with a wrong token (1008), changing nothing; the API hang-up closes the stream', async () => {
    const res = await dial('+919800000099');
    const id = res.body.id as string;
    await waitForCall(gw, acc.key, id, (x) => x.status === 'in_progress');
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const terminal = new URLSearchParams({ CallSid: 'forged', EventType: 'terminal', Status: 'completed', ConversationDuration: '1' }).toString();
    // Another call's secret (an earlier test's call) is not this one's.
    const other = exotel.requests.find((r) => r.path.endsWith('/calls/connect') && r.form.get('customfield') !== id);
    const otherToken = other ? new URL(other.form.get('statuscallback')!).searchParams.get('token') : null;
    for (const query of ['', '?token=wrong', ...(otherToken ? [`?token=${otherToken}`] : [])]) {
      const forged = await call(gw.url, 'POST', `/v1/voice/calls/${id}/callback/exotel${query}`, { raw: terminal, headers: form });
      assert.deepEqual([forged.status, forged.body.error?.code], [403, 'permission_denied'], query);
    }
    // Not a Twilio call: no Twilio route could have sent that.
    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${id}/callback/twilio`, { raw: terminal, headers: form })).status, 404);

    // A stream with the call id but a wrong token, started as Exotel would: closed 1008.
    const streamUrl = `${gw.url.replace(/^http/, 'ws')}/v1/voice/calls/${id}/stream?call_id=${id}&token=wrong`;
    const code = await new Promise<number>((resolve) => {
      const ws = new WebSocket(streamUrl);
      ws.on('error', () => undefined);
      ws.on('open', () => {
        ws.send(JSON.stringify({ event: 'connected' }));
        ws.send(
          JSON.stringify({
            event: 'start',
            sequence_number: '1',
            stream_sid: 'MZevil',
            start: {
              stream_sid: 'MZevil',
              call_sid: 'evil',
              custom_parameters: { call_id: id, token: 'wrong' },
              media_format: { encoding: 'audio/x-raw', sample_rate: '8000', bit_rate: '16' },
            },
          }),
        );
      });
      ws.on('close', (c) => resolve(c));
    });
    assert.equal(code, 1008);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await call(gw.url, 'GET', `/v1/voice/calls/${id}`, { token: acc.key })).body.status, 'in_progress');

    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${id}/hangup`, { token: acc.key })).status, 200);
    const c = await waitForCall(gw, acc.key, id, ended);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'api_hangup']);
    assert.ok(c.billed_seconds >= 1, String(c.billed_seconds));
    assert.ok(exotel.detailsAsked(id), 'the call details asked after the stream closed');
  });

  it('barge-in: the callee speaks over the greeting; Exotel is told to clear, heard_text is what played', async () => {
    stt.say('wait I have a question about my card');
    const res = await dial('+919800000011');
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 60_000);
    assertBargedIn(c);
    assert.ok(exotel.streams.get(res.body.id)!.clears >= 1, 'clear sent down the stream');
  });

  it("llm agent: its streamed sentences play in Exotel's chunks as they come, and the whole reply is heard", async () => {
    const reply = 'Your account is active and in good standing. The last payment reached us on Monday morning. Is there anything else I can help with?';
    stt.say('what is the weather like today');
    llm.next({ reply, chunkDelayMs: 65 });
    const res = await dial('+919800000013', {
      agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Be brief.' },
      first_message: { text: 'Hello, this is your bank.' },
    });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 60_000);
    assert.deepEqual(
      c.transcript.map((t: { role: string; text: string }) => [t.role, t.text]),
      [
        ['agent', 'Hello, this is your bank.'],
        ['callee', 'what is the weather like today'],
        ['agent', reply],
      ],
    );
    assert.deepEqual([c.transcript[2].heard_text, c.transcript[2].interrupted], [reply, false], 'played to its last mark');
    assert.equal(llm.calls('/v1/chat/completions').at(-1)!.body.stream, true);
    const sent = exotel.streams.get(res.body.id)!;
    assert.deepEqual(
      sent.media.filter((bytes) => bytes % 320 !== 0 || bytes < 3200),
      [],
      'every payload a multiple of 320 bytes, at least 3,200',
    );
    assert.ok(sent.media.length >= 30 && sent.clears === 0, `${sent.media.length} media messages, ${sent.clears} clears`);
  });
});
