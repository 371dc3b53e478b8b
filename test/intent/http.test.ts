// POST /v1/understand end to end with the demo pack (model intent-demo from config/default.json):
// English, Hindi and Hinglish; the ASK → CREATE_DISPUTE confirmation resolved from the session;
// the denial path; sessions isolated per API key; errors; one charge per call; admin packs.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { readPackFile } from '../../src/intent/packs.ts';

const pack = readPackFile('config/packs/demo-banking-telecom.json');

const MODEL = 'intent-demo';

describe('POST /v1/understand', () => {
  let gw: TestGateway;
  let key: string;
  let user: { id: number; token: string };

  before(async () => {
    gw = await startTestGateway();
    user = await signup(gw.url);
    const t = await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: user.id, amount_cents: 1000 } });
    assert.equal(t.status, 201, t.text);
    key = (await createKey(gw.url, user.token)).api_key;
  });
  after(() => gw.destroy());

  const understand = (body: Record<string, unknown>, token = key) => call(gw.url, 'POST', '/v1/understand', { token, body: { model: MODEL, ...body } });

  it('classifies an English ATM complaint and asks to raise a dispute, in the spec shape', async () => {
    const r = await understand({ session_id: 's-en', text: 'The ATM did not dispense cash but Rs. 5,000 was debited from my account yesterday' });
    assert.equal(r.status, 200, r.text);
    const b = r.body;
    assert.deepEqual(
      Object.keys(b).sort(),
      [
        'candidate_intents',
        'classification',
        'classifier_used',
        'decision',
        'dialogue_act',
        'entities',
        'intent',
        'latency_ms',
        'model',
        'request_id',
        'response',
        'session_id',
      ].sort(),
    );
    assert.equal(b.model, MODEL);
    assert.equal(b.session_id, 's-en');
    assert.equal(b.request_id, r.headers.get('x-request-id'));
    assert.equal(b.classification, 'KNOWN');
    assert.equal(b.intent.id, 'BANKING.ATM.CASH_NOT_DISPENSED');
    assert.match(b.intent.id, /^[A-Z][A-Z0-9_]*(\.[A-Z][A-Z0-9_]*)+$/);
    assert.ok(['HIGH', 'MEDIUM', 'LOW'].includes(b.intent.band));
    assert.equal(b.dialogue_act, 'COMPLAINT');
    assert.equal(b.entities.amount, 5000);
    assert.match(b.entities.date, /^\d{4}-\d{2}-\d{2}$/);
    assert.deepEqual(b.decision, { action: 'ASK', next_state: 'AWAITING_DISPUTE_CONFIRMATION', response_id: 'BANKING.DISPUTE.ASK_RAISE' });
    assert.deepEqual(b.response, { response_id: 'BANKING.DISPUTE.ASK_RAISE', language: 'en-IN', channel: 'text' });
    assert.ok(['deterministic', 'local_model'].includes(b.classifier_used));
    assert.ok(b.candidate_intents.length > 0 && b.candidate_intents.every((c: any) => typeof c.score === 'number' && typeof c.source === 'string'));
    assert.equal(typeof b.latency_ms, 'number');
  });

  it('a Hinglish complaint, then "haan ji" in the same session, creates the dispute from context', async () => {
    const first = await understand({ session_id: 'flow-1', text: 'paise nahi nikle par account se kat gaye', language: 'hi-IN' });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.intent.id, 'BANKING.ATM.CASH_NOT_DISPENSED');
    assert.equal(first.body.decision.action, 'ASK');
    assert.equal(first.body.response.language, 'hi-IN');
    const yes = await understand({ session_id: 'flow-1', text: 'haan ji', language: 'hi-IN' });
    assert.equal(yes.status, 200, yes.text);
    assert.equal(yes.body.classifier_used, 'context');
    assert.equal(yes.body.dialogue_act, 'CONFIRMATION');
    assert.equal(yes.body.decision.action, 'CREATE_DISPUTE');
    assert.equal(yes.body.decision.next_state, 'DISPUTE_CREATED');
    assert.equal(yes.body.intent.id, 'BANKING.ATM.CASH_NOT_DISPENSED');
    // The confirmation was used up: another "yes" is not a second dispute.
    const again = await understand({ session_id: 'flow-1', text: 'yes', language: 'hi-IN' });
    assert.notEqual(again.body.decision.action, 'CREATE_DISPUTE');
    assert.notEqual(again.body.classifier_used, 'context');
  });

  it('a Hindi (Devanagari) complaint followed by a denial creates nothing', async () => {
    const first = await understand({ session_id: 'flow-2', text: 'एटीएम से पैसे नहीं निकले पर खाते से ₹२००० कट गए', language: 'hi-IN' });
    assert.equal(first.body.intent.id, 'BANKING.ATM.CASH_NOT_DISPENSED');
    assert.equal(first.body.entities.amount, 2000);
    assert.equal(first.body.decision.action, 'ASK');
    const no = await understand({ session_id: 'flow-2', text: 'nahi', language: 'hi-IN' });
    assert.equal(no.body.classifier_used, 'context');
    assert.equal(no.body.dialogue_act, 'DENIAL');
    assert.equal(no.body.decision.action, 'CLOSE');
    assert.notEqual(no.body.decision.action, 'CREATE_DISPUTE');
  });

  it('a recharge complaint without its amount asks for it, and the bare answer "299" goes on from context', async () => {
    const first = await understand({ session_id: 'flow-amount', text: 'recharge kiya par pack nahi aaya', language: 'hi-IN' });
    assert.equal(first.body.intent.id, 'TELECOM.RECHARGE.NOT_REFLECTED');
    assert.deepEqual(first.body.decision, { action: 'ASK', next_state: 'AWAITING_AMOUNT', response_id: 'TELECOM.RECHARGE.ASK_AMOUNT' });
    const answer = await understand({ session_id: 'flow-amount', text: '299 ka tha', language: 'hi-IN' });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.classification, 'KNOWN');
    assert.equal(answer.body.classifier_used, 'context');
    assert.equal(answer.body.intent.id, 'TELECOM.RECHARGE.NOT_REFLECTED');
    assert.deepEqual(answer.body.entities, { amount: 299 });
    assert.equal(answer.body.decision.action, 'ESCALATE');
    // Out of that context a bare number is no amount and no intent.
    const cold = await understand({ session_id: 'flow-amount-2', text: '299' });
    assert.deepEqual(cold.body.entities, {});
    assert.notEqual(cold.body.classification, 'KNOWN');
  });

  it('an AMBIGUOUS turn offers its close candidates; "the second one" or a turn that prefers one picks it from context', async () => {
    const first = await understand({ session_id: 'flow-pick', text: 'the cash machine kept my plastic' });
    assert.equal(first.body.classification, 'AMBIGUOUS');
    assert.equal(first.body.decision.response_id, 'GEN.DISAMBIGUATE');
    const offered = first.body.candidate_intents
      .filter((c: any) => c.source === 'local_model')
      .slice(0, 2)
      .map((c: any) => c.id);
    assert.deepEqual(offered, ['BANKING.ATM.WRONG_AMOUNT', 'BANKING.ATM.CARD_RETAINED']);
    const second = await understand({ session_id: 'flow-pick', text: 'the second one' });
    assert.equal(second.body.classifier_used, 'context');
    assert.equal(second.body.intent.id, 'BANKING.ATM.CARD_RETAINED');
    assert.equal(second.body.decision.response_id, pack.intents.find((i) => i.id === 'BANKING.ATM.CARD_RETAINED')!.decisions.initial.response_id);
    await understand({ session_id: 'flow-pick-2', text: 'the cash machine kept my plastic' });
    const money = await understand({ session_id: 'flow-pick-2', text: 'paise wala', language: 'hi-IN' });
    assert.equal(money.body.classifier_used, 'context');
    assert.equal(money.body.intent.id, 'BANKING.ATM.WRONG_AMOUNT');
    assert.equal(money.body.decision.action, 'ASK', 'a dispute intent still asks to confirm');
    await understand({ session_id: 'flow-pick-3', text: 'the cash machine kept my plastic' });
    const away = await understand({ session_id: 'flow-pick-3', text: 'what is the weather today' });
    assert.equal(away.body.classification, 'OUT_OF_SCOPE');
  });

  it('counts turns by model, classification and deciding stage in /metrics', async () => {
    const text = async () => (await call(gw.metricsUrl, 'GET', '/metrics')).text;
    const count = (m: string, labels: string) => Number(new RegExp(`gateway_intent_turns_total\\{${labels}\\} (\\d+)`).exec(m)?.[1] ?? 0);
    const known = 'model="intent-demo",classification="KNOWN",classifier_used="deterministic"';
    const context = 'model="intent-demo",classification="KNOWN",classifier_used="context"';
    const before = await text();
    await understand({ session_id: 'metrics-1', text: 'ATM did not dispense cash but my account was debited' });
    await understand({ session_id: 'metrics-1', text: 'yes' });
    const after = await text();
    assert.equal(count(after, known) - count(before, known), 1);
    assert.equal(count(after, context) - count(before, context), 1);
    assert.match(after, /gateway_intent_cascade_seconds_count\{classifier_used="deterministic"\} [1-9]/);
    // The sessions' runtime reports its own work beside it.
    assert.match(after, /gateway_actor_persist_seconds_count\{kind="intent-session",reason="[a-z]+"\} [1-9]/);
    assert.match(after, /gateway_actor_leases_held [1-9]/, 'the session just written holds its grace lease');
    assert.match(after, /gateway_actor_mailbox_depth \d+/);
  });

  it('the same session_id on another key shares nothing', async () => {
    const other = await createKey(gw.url, user.token, { name: 'second' });
    await understand({ session_id: 'shared-id', text: 'ATM did not give money but amount deducted' });
    const yesOther = await understand({ session_id: 'shared-id', text: 'yes' }, other.api_key);
    assert.equal(yesOther.status, 200, yesOther.text);
    assert.notEqual(yesOther.body.classifier_used, 'context');
    assert.notEqual(yesOther.body.decision.action, 'CREATE_DISPUTE');
    const yesOwn = await understand({ session_id: 'shared-id', text: 'yes' });
    assert.equal(yesOwn.body.decision.action, 'CREATE_DISPUTE');
  });

  it('telecom turns in Hinglish, out-of-scope turns and greetings', async () => {
    const net = await understand({ session_id: 't1', text: 'net nahi chal raha', language: 'hi-IN' });
    assert.equal(net.body.intent.id, 'TELECOM.DATA.SLOW_INTERNET');
    const oos = await understand({ session_id: 't1', text: 'what is the weather in Delhi today?' });
    assert.equal(oos.body.classification, 'OUT_OF_SCOPE');
    assert.equal(oos.body.intent, null);
    assert.equal(oos.body.decision.response_id, 'GEN.OUT_OF_SCOPE');
    // The first out-of-scope turn asks back (it may be a misheard sentence); a second in a row closes.
    assert.equal(oos.body.decision.action, 'ASK');
    const again = await understand({ session_id: 't1', text: 'no, I want to know the weather tomorrow' });
    assert.equal(again.body.classification, 'OUT_OF_SCOPE');
    assert.deepEqual(again.body.decision, { action: 'CLOSE', next_state: 'OUT_OF_SCOPE', response_id: 'GEN.OUT_OF_SCOPE_CLOSE' });
    const hi = await understand({ session_id: 't1', text: 'namaste' });
    assert.equal(hi.body.dialogue_act, 'GREETING');
    assert.notEqual(hi.body.classification, 'KNOWN');
    assert.equal(hi.body.intent, null);
    assert.equal(hi.body.decision.response_id, 'GEN.GREETING');
  });

  it('two concurrent turns on one session are handled one after the other', async () => {
    await understand({ session_id: 'conc', text: 'ATM did not dispense cash but amount debited' });
    const [a, b] = await Promise.all([understand({ session_id: 'conc', text: 'yes' }), understand({ session_id: 'conc', text: 'yes please' })]);
    const actions = [a.body.decision.action, b.body.decision.action].sort();
    // Exactly one of them consumed the pending confirmation.
    assert.equal(actions.filter((x) => x === 'CREATE_DISPUTE').length, 1, JSON.stringify(actions));
  });

  it('answers missing_input, language_not_supported and model_not_found', async () => {
    const noSession = await understand({ text: 'hello' });
    assert.equal(noSession.status, 400);
    assert.equal(noSession.body.error.code, 'missing_input');
    const noText = await understand({ session_id: 'x' });
    assert.equal(noText.status, 400);
    assert.equal(noText.body.error.code, 'missing_input');
    const lang = await understand({ session_id: 'x', text: 'hello', language: 'ta-IN' });
    assert.equal(lang.status, 400);
    assert.equal(lang.body.error.code, 'language_not_supported');
    const model = await understand({ model: 'nope', session_id: 'x', text: 'hello' });
    assert.equal(model.status, 404);
    assert.equal(model.body.error.code, 'model_not_found');
    const noKey = await call(gw.url, 'POST', '/v1/understand', { body: { model: MODEL, session_id: 'x', text: 'hi' } });
    assert.equal(noKey.status, 401);
    const chatOnly = await createKey(gw.url, user.token, { name: 'chat-only', scopes: ['chat'] });
    const scoped = await understand({ session_id: 'x', text: 'hi' }, chatOnly.api_key);
    assert.equal(scoped.status, 403);
  });

  it('bills each call once at cents_per_call, whatever stage resolved it', async () => {
    const s = await signup(gw.url);
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 1 } });
    const k = (await createKey(gw.url, s.token)).api_key;
    const before = (await call(gw.url, 'GET', '/portal/wallet', { token: s.token })).body.balance_microcents;
    await understand({ session_id: 'b', text: 'ATM did not dispense cash but debited' }, k); // deterministic
    await understand({ session_id: 'b', text: 'yes' }, k); // context
    await understand({ session_id: 'b', text: 'qwerty zxcv' }, k); // local model
    const afterBal = (await call(gw.url, 'GET', '/portal/wallet', { token: s.token })).body.balance_microcents;
    assert.equal(before - afterBal, 300_000); // 3 calls × 0.1 cent
    const broke = await signup(gw.url);
    const bk = (await createKey(gw.url, broke.token)).api_key;
    assert.equal((await understand({ session_id: 'b', text: 'hello' }, bk)).status, 402);
  });

  it('admin: scores the live pack, or a candidate version without storing it, on labelled turns', async () => {
    const turns = [
      { text: 'ATM did not dispense cash but my account was debited', expected: 'BANKING.ATM.CASH_NOT_DISPENSED', group: 'en' },
      { text: 'net nahi chal raha', expected: 'TELECOM.DATA.SLOW_INTERNET', group: 'hinglish' },
      { text: 'I lost my credit card, block it', expected: 'OUT_OF_SCOPE', group: 'near' },
      { text: 'net nahi chal raha', expected: 'TELECOM.CALL.DROPS', group: 'hinglish' },
    ];
    const path = '/admin/intent-packs/demo-banking-telecom/evaluate';
    const live = await call(gw.url, 'POST', path, { token: ADMIN_TOKEN, body: { turns } });
    assert.equal(live.status, 200, live.text);
    assert.deepEqual(live.body.pack, { id: 'demo-banking-telecom', version: 4, candidate: false });
    assert.deepEqual(
      live.body.results.map((r: any) => r.outcome),
      ['right', 'right', 'right', 'wrong'],
    );
    assert.equal(live.body.results[3].intent, 'TELECOM.DATA.SLOW_INTERNET');
    assert.equal(live.body.results[2].intent, null);
    assert.equal(live.body.accuracy, 0.75);
    assert.equal(live.body.wrong_action_rate, 0.25);
    assert.deepEqual(live.body.by_group.hinglish, { turns: 2, right: 1 });

    // A candidate without the out-of-scope examples and phrases takes a lost credit card for a card
    // the ATM kept; it is scored, not stored.
    const pack = readPackFile('config/packs/demo-banking-telecom.json');
    const candidate = { ...pack, version: 9, out_of_scope: { keywords: [] } };
    const tried = await call(gw.url, 'POST', path, { token: ADMIN_TOKEN, body: { pack: candidate, turns: turns.slice(2, 3) } });
    assert.equal(tried.status, 200, tried.text);
    assert.deepEqual(tried.body.pack, { id: 'demo-banking-telecom', version: 9, candidate: true });
    assert.equal(tried.body.results[0].outcome, 'wrong');
    assert.equal(tried.body.results[0].intent, 'BANKING.ATM.CARD_RETAINED');
    const stored = await call(gw.url, 'GET', '/admin/intent-packs/demo-banking-telecom', { token: ADMIN_TOKEN });
    assert.equal(stored.body.version, 4);

    const badLabel = await call(gw.url, 'POST', path, { token: ADMIN_TOKEN, body: { turns: [{ text: 'hi', expected: 'NO.SUCH' }] } });
    assert.equal(badLabel.status, 400);
    assert.equal(badLabel.body.error.param, 'turns[0].expected');
    const badPack = await call(gw.url, 'POST', path, {
      token: ADMIN_TOKEN,
      body: { pack: { ...pack, intents: [{ ...pack.intents[0], id: 'lower.case' }] }, turns },
    });
    assert.equal(badPack.status, 400);
    assert.match(badPack.body.error.param, /^pack\.intents/);
    const otherId = await call(gw.url, 'POST', path, { token: ADMIN_TOKEN, body: { pack: { ...pack, id: 'another' }, turns } });
    assert.equal(otherId.status, 400);
    assert.equal((await call(gw.url, 'POST', '/admin/intent-packs/none/evaluate', { token: ADMIN_TOKEN, body: { turns } })).status, 404);
    assert.equal((await call(gw.url, 'POST', path, { token: ADMIN_TOKEN, body: { turns: [] } })).status, 400);
    assert.equal((await call(gw.url, 'POST', path, { body: { turns } })).status, 401);
  });

  it('admin: lists packs, stores a new version that takes effect without a restart, refuses a bad pack clearly', async () => {
    const list = await call(gw.url, 'GET', '/admin/intent-packs', { token: ADMIN_TOKEN });
    assert.equal(list.status, 200);
    const demo = list.body.data.find((p: any) => p.id === 'demo-banking-telecom');
    assert.ok(demo && demo.version === 4 && demo.source === 'config');

    const pack = readPackFile('config/packs/demo-banking-telecom.json');
    const cnd = pack.intents.find((i) => i.id === 'BANKING.ATM.CASH_NOT_DISPENSED')!;
    cnd.confirm = false;
    cnd.decisions.initial = { action: 'CREATE_DISPUTE', next_state: 'DISPUTE_CREATED', response_id: 'BANKING.DISPUTE.CREATED' };
    const put = await call(gw.url, 'PUT', '/admin/intent-packs/demo-banking-telecom', { token: ADMIN_TOKEN, body: { ...pack, version: 5 } });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.body.version, 5);
    const r = await understand({ session_id: 'v2', text: 'ATM did not dispense cash but debited' });
    assert.equal(r.body.decision.action, 'CREATE_DISPUTE');

    const bad = await call(gw.url, 'PUT', '/admin/intent-packs/broken', {
      token: ADMIN_TOKEN,
      body: { ...pack, id: undefined, intents: [{ ...cnd, id: 'lower.case' }] },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_request');
    assert.match(bad.body.error.message, /intents\.0\.id/);
    const unauth = await call(gw.url, 'GET', '/admin/intent-packs');
    assert.equal(unauth.status, 401);
  });
});
