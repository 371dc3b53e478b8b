// A call's analysis after it ends (issue 43 §2; src/voice/analysis.ts): the simulator's scripted
// callees, the scripted recogniser, and the fake OpenAI upstream (its real wire format) as the
// analysis's llm `chat-test`. Fields extracted and typed, a value of the wrong type null, an
// answer that is not JSON all null; an upstream 500 retried then `failed`, the call's status and
// bill unchanged and the chat free; billed once as a chat call (wallet and usage records);
// `call.analyzed` once; the POST's refusals; another account sees nothing; a pack's own fields.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, type TestGateway } from '../helper.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import { startAnthropicUpstream } from '../fakes/anthropic-upstream.ts';
import { startReceiver, type Receiver } from '../webhooks/receiver.ts';
import { waitFor } from '../actors/helpers.ts';
import { CALLEES, putChatModel, putScriptedVoice, ScriptedStt, scriptedVoiceModel } from './simulated.ts';
import { ended, place, startVoiceGateway, voiceAccount, waitForCall, walletMicrocents, type VoiceAccount } from './helpers.ts';

const FIELDS = [
  { name: 'issue', type: 'string', description: 'What the callee reports', enum: ['atm_cash', 'card', 'other'] },
  { name: 'amount', type: 'number', description: 'The amount in rupees' },
  { name: 'wants_dispute', type: 'boolean', description: 'Whether the callee wants a dispute raised' },
  { name: 'attempts', type: 'integer', description: 'How many times the callee tried' },
  { name: 'branch', type: 'string', description: 'The branch named' },
];
const ANALYSIS = { model: 'chat-test', fields: FIELDS };
/** The dispute callee (CALLEES): answers, reports the ATM, says yes, hangs up after the confirmation (about 18 s). */
const DISPUTE = '+919800000010';
/** A short call with a conversation (a callee turn): answers, keys 1, hangs up (about 2 s). */
const KEYS = '+919800000020';
const KEYS_CALLEE = { to: KEYS, answer: 'answer', ring_ms: 100, steps: [{ silence_ms: 300 }, { dtmf: '1' }, { silence_ms: 900 }, { hangup: true }] };

describe('call analysis', () => {
  let gw: TestGateway;
  let stt: ScriptedStt;
  let llm: Awaited<ReturnType<typeof startOpenAIUpstream>>;
  let acc: VoiceAccount;
  let receiver: Receiver;
  let anthropic: Awaited<ReturnType<typeof startAnthropicUpstream>>;

  before(async () => {
    stt = await ScriptedStt.start();
    llm = await startOpenAIUpstream();
    receiver = await startReceiver();
    anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-secret' });
    const callees = [KEYS_CALLEE, ...CALLEES];
    gw = await startVoiceGateway(callees, {
      voice: { maxConcurrentCalls: 3, minAffordableSeconds: 10, mediaTimeoutMs: 10_000, analysisBackoffMs: 20, simulator: { callees } },
      webhooks: { allowPrivateNetworks: true, allowHttp: true, sweepIntervalMs: 200 },
    });
    await putScriptedVoice(gw.url, stt, 'voice-test', [{ provider: 'simulator' }]);
    await putChatModel(gw.url, llm);
    acc = await voiceAccount(gw, 1000);
    const hook = await call(gw.url, 'POST', '/portal/webhooks', { token: acc.session, body: { url: receiver.url, events: ['call.analyzed'] } });
    assert.equal(hook.status, 201, hook.text);
  });
  after(async () => {
    await gw?.destroy();
    await stt?.server.close();
    await llm?.close();
    await receiver?.close();
    await anthropic?.close();
  });

  const dial = (to: string, body: Record<string, unknown> = {}, who = acc) => place(gw, who.key, { model: 'voice-test', to, ...body });
  const analyzed = (c: any) => ended(c) && c.analysis && c.analysis.status !== 'pending';
  /** The call's usage records of the analysis's model, once `n` are written (usage is written in batches). */
  const chatRecords = async (id: string, n: number) => {
    let rows: any[] = [];
    await waitFor(`${n} usage records of the analysis`, async () => {
      const all = (await call(gw.url, 'GET', '/portal/usage/records?limit=100', { token: acc.session })).body.data as any[];
      rows = all.filter((r) => r.request_id.startsWith(c_(id)) && r.model === 'chat-test');
      return rows.length >= n;
    });
    return rows;
  };
  const c_ = (id: string) => `${id}:analysis:`;

  it('extracts the fields typed (a wrong type null), billed once as a chat call, call.analyzed once; another account sees nothing', async () => {
    stt.say('ATM did not give money but my account got debited', 'haan');
    const reply = {
      summary: 'The callee reported an ATM that debited without dispensing cash; a dispute was raised.',
      fields: { issue: 'atm_cash', amount: 500, wants_dispute: true, attempts: 1.5, branch: 7 },
    };
    llm.next({ reply: JSON.stringify(reply) });
    const before = await walletMicrocents(gw, acc.session);
    const res = await dial(DISPUTE, { analysis: ANALYSIS });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(gw, acc.key, res.body.id, analyzed, 60_000);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
    const a = c.analysis;
    assert.equal(a.status, 'completed', JSON.stringify(a));
    assert.deepEqual([a.source, a.model, a.summary], ['llm', 'chat-test', reply.summary]);
    // 1.5 is no integer and 7 no string: null, never coerced.
    assert.deepEqual(a.fields, { issue: 'atm_cash', amount: 500, wants_dispute: true, attempts: null, branch: null });
    assert.equal(a.intent, 'BANKING.ATM.CASH_NOT_DISPENSED', JSON.stringify(c.transcript));
    assert.deepEqual(a.actions, ['CREATE_DISPUTE']);
    assert.equal(a.attempts, 1);
    // The request: the transcript's turns, a strict JSON schema of the fields.
    const sent = llm.calls('/v1/chat/completions').at(-1)!.body as any;
    assert.equal(sent.response_format.type, 'json_schema');
    assert.equal(sent.response_format.json_schema.strict, true);
    assert.deepEqual(
      sent.response_format.json_schema.schema.properties.fields.required,
      FIELDS.map((f) => f.name),
    );
    assert.deepEqual(sent.response_format.json_schema.schema.properties.fields.properties.issue.enum, ['atm_cash', 'card', 'other', null]);
    assert.match(sent.messages[1].content, /Callee: ATM did not give money but my account got debited/);
    assert.match(sent.messages[1].content, /Agent: /);
    // Billed as a chat call of chat-test, its tokens, once; the wallet paid the call and the analysis.
    const chat = await chatRecords(c.id, 1);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await chatRecords(c.id, 1)).length, 1, 'one chat record');
    assert.deepEqual([chat[0].prompt_tokens, chat[0].completion_tokens], [a.usage.prompt_tokens, a.usage.completion_tokens]);
    assert.equal(chat[0].cost_microcents, Math.round(a.cost_cents * 1_000_000));
    assert.ok(a.cost_cents > 0);
    const after = await walletMicrocents(gw, acc.session);
    assert.equal(before - after, Math.round(c.cost_cents * 1_000_000) + chat[0].cost_microcents);
    await waitFor('call.analyzed delivered', () => receiver.received.some((r) => r.json.call_id === c.id));
    await new Promise((r) => setTimeout(r, 600)); // a second one would have come by now
    const events = receiver.received.filter((r) => r.json.call_id === c.id);
    assert.deepEqual(
      events.map((e) => e.json.event),
      ['call.analyzed'],
    );
    assert.deepEqual((events[0]!.json.analysis as any).fields, a.fields);
    // The list shows it too; another account's key finds no such call.
    const list = (await call(gw.url, 'GET', '/v1/voice/calls?limit=5', { token: acc.key })).body.data;
    assert.deepEqual(list.find((x: any) => x.id === c.id).analysis.fields, a.fields);
    const stranger = await voiceAccount(gw, 0);
    assert.equal((await call(gw.url, 'GET', `/v1/voice/calls/${c.id}`, { token: stranger.key })).status, 404);
  });

  it('an answer that is not JSON: completed with every field null, billed (the model answered)', async () => {
    llm.next({ reply: 'Sorry, I cannot produce JSON today.' });
    const res = await dial(KEYS, { analysis: ANALYSIS });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(gw, acc.key, res.body.id, analyzed, 30_000);
    assert.equal(c.analysis.status, 'completed', JSON.stringify(c.analysis));
    assert.equal(c.analysis.summary, null);
    assert.deepEqual(Object.values(c.analysis.fields), [null, null, null, null, null]);
    assert.ok(c.analysis.cost_cents > 0);
  });

  it('an upstream 500: retried, then failed; the call, its bill and the wallet are as without it, the chat free', async () => {
    const seen = llm.calls('/v1/chat/completions').length;
    llm.next({ status: 500 }, { status: 500 }, { status: 500 });
    const before = await walletMicrocents(gw, acc.session);
    const res = await dial(KEYS, { analysis: { model: 'chat-test', summary: true } });
    const c = await waitForCall(gw, acc.key, res.body.id, analyzed, 30_000);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup']);
    assert.ok(c.billed_seconds > 0);
    assert.deepEqual([c.analysis.status, c.analysis.attempts, c.analysis.cost_cents, c.analysis.summary], ['failed', 3, 0, null]);
    assert.ok(c.analysis.error.code, JSON.stringify(c.analysis));
    assert.equal(llm.calls('/v1/chat/completions').length - seen, 3, 'three attempts');
    assert.equal(before - (await walletMicrocents(gw, acc.session)), Math.round(c.cost_cents * 1_000_000), 'only the call was billed');
    const chat = await chatRecords(c.id, 3);
    assert.equal(chat.length, 3);
    assert.ok(chat.every((r) => r.cost_microcents === 0));
    assert.equal((await call(gw.url, 'GET', '/portal/wallet', { token: acc.session })).body.held_cents, 0, 'no hold left behind');
  });

  it("a call with no conversation: skipped, nothing asked; a pack call without analysis: the pack fields, free; an llm agent's: none", async () => {
    const seen = llm.calls('/v1/chat/completions').length;
    const busy = await dial('+919800000002', { analysis: ANALYSIS });
    const b = await waitForCall(gw, acc.key, busy.body.id, analyzed, 20_000);
    assert.deepEqual([b.status, b.analysis.status, b.analysis.cost_cents], ['busy', 'skipped', 0]);
    assert.equal(llm.calls('/v1/chat/completions').length, seen);
    const res = await dial(KEYS);
    const c = await waitForCall(gw, acc.key, res.body.id, (x) => ended(x) && x.analysis, 20_000);
    const a = c.analysis;
    assert.deepEqual(
      [a.status, a.source, a.model, a.summary, a.fields, a.actions, a.cost_cents],
      ['completed', 'pack', null, null, {}, [], 0],
      JSON.stringify(a),
    );
    assert.deepEqual([typeof a.intent === 'string' || a.intent === null, typeof a.entities], [true, 'object']);
    assert.equal(llm.calls('/v1/chat/completions').length, seen, 'no llm');
    // An llm agent's call that asked for none has no analysis.
    const llmAgent = await dial(KEYS, { agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Be brief.' }, first_message: { text: 'Hello.' } });
    assert.equal((await waitForCall(gw, acc.key, llmAgent.body.id, ended, 20_000)).analysis, null);
  });

  it("a route without JSON schemas (Anthropic's): asked again without one, its fenced JSON read", async () => {
    const claude = { type: 'llm', owned_by: 'test', pricing: { input_cents_per_mtok: 1, output_cents_per_mtok: 1 } };
    const route = { provider: 'anthropic', base_url: anthropic.url, api_key: 'sk-ant-secret', upstream_model: 'claude-up' };
    assert.equal((await call(gw.url, 'PUT', '/admin/models/claude-test', { token: ADMIN_TOKEN, body: { ...claude, routes: [route] } })).status, 201);
    const json = { summary: 'The callee asked about the weather.', fields: { issue: 'other', amount: null, wants_dispute: false, attempts: 1, branch: null } };
    anthropic.next({ reply: `\`\`\`json\n${JSON.stringify(json)}\n\`\`\`` });
    const res = await dial(KEYS, { analysis: { ...ANALYSIS, model: 'claude-test' } });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(gw, acc.key, res.body.id, analyzed, 30_000);
    assert.equal(c.analysis.status, 'completed', JSON.stringify(c.analysis));
    assert.deepEqual([c.analysis.summary, c.analysis.fields], [json.summary, json.fields]);
    assert.equal(anthropic.calls('/v1/messages').length, 1);
  });

  it("a voice model's default analysis, a call's own in its place; the default checked when the model is written", async () => {
    const put = (body: unknown) => call(gw.url, 'PUT', '/admin/models/voice-analysed', { token: ADMIN_TOKEN, body });
    const bad = await put(scriptedVoiceModel([{ provider: 'simulator' }], { analysis: { model: 'chat-test', fields: [FIELDS[1], FIELDS[1]] } }));
    assert.deepEqual([bad.status, bad.body.error?.param], [400, 'analysis.fields.1.name'], bad.text);
    assert.equal((await put(scriptedVoiceModel([{ provider: 'simulator' }], { analysis: { model: 'chat-test', fields: [FIELDS[1]] } }))).status, 201);
    const byModel = await place(gw, acc.key, { model: 'voice-analysed', to: '+919800000002' });
    const own = await place(gw, acc.key, { model: 'voice-analysed', to: '+919800000002', analysis: { model: 'chat-test', fields: [FIELDS[2]] } });
    const [a, b] = await Promise.all([byModel, own].map((r) => waitForCall(gw, acc.key, r.body.id, analyzed, 20_000)));
    assert.deepEqual([a.analysis.status, a.analysis.fields], ['skipped', { amount: null }]);
    assert.deepEqual([b.analysis.status, b.analysis.fields], ['skipped', { wants_dispute: null }]);
  });

  it('refuses at the POST: an unknown, a non-llm or an unavailable model, twin names, an enum of the wrong type, an unknown field', async () => {
    const refused = async (analysis: unknown, param: string) => {
      const res = await dial('+919800000012', { analysis });
      assert.deepEqual([res.status, res.body.error?.code, res.body.error?.param], [400, 'invalid_request', param], res.text);
    };
    await refused({ model: 'no-such-model' }, 'analysis.model');
    await refused({ model: 'stt-local' }, 'analysis.model');
    await refused({ model: 'chat-test', fields: [FIELDS[0], FIELDS[0]] }, 'analysis.fields.1.name');
    await refused({ model: 'chat-test', fields: [{ name: 'n', type: 'integer', description: 'd', enum: [1, 'two'] }] }, 'analysis.fields.0.enum');
    await refused({ model: 'chat-test', fields: [{ name: 'Bad-Name', type: 'string', description: 'd' }] }, 'analysis.fields.0.name');
    const extra = await dial('+919800000012', { analysis: { model: 'chat-test', extra: 1 } });
    assert.equal(extra.status, 400, extra.text);
    assert.equal(extra.body.error.code, 'invalid_request');
    // Not available to the account: an operator restricted it to the voice models (and the ones they run on).
    const limited = await voiceAccount(gw, 100);
    const access = ['voice-test', 'stt-scripted', 'tts-local', 'intent-demo', 'stt-local'];
    const set = await call(gw.url, 'PUT', `/admin/access/user/${limited.id}`, { token: ADMIN_TOKEN, body: { models: access } });
    assert.equal(set.status, 200, set.text);
    const res = await dial('+919800000012', { analysis: { model: 'chat-test' } }, limited);
    assert.deepEqual([res.status, res.body.error?.param], [400, 'analysis.model'], res.text);
  });
});
