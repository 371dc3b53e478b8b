// The cascade's llm_fallback stage, against a fake OpenAI-compatible upstream on loopback: it runs
// only for turns the earlier stages left unresolved and only when the intent model has a route; its
// answer must be one of the pack's intent ids (or OUT_OF_SCOPE), anything else or a failing upstream
// leaves the earlier result; the call is billed once whatever happened.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';

const GIBBERISH = 'qwzx plorb vrentak sloomy';

describe('intent llm_fallback stage', () => {
  let gw: TestGateway;
  let up: FakeServer;
  let key: string;
  let session: string;

  before(async () => {
    up = await startOpenAIUpstream({ apiKey: 'sk-up-intent' });
    gw = await startTestGateway();
    const m = await call(gw.url, 'PUT', '/admin/models/intent-llm', {
      token: ADMIN_TOKEN,
      body: {
        type: 'intent',
        owned_by: 't',
        languages: ['en-IN', 'hi-IN'],
        pack: 'demo-banking-telecom',
        pricing: { cents_per_call: 0.1 },
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-up-intent', upstream_model: 'classifier-llm' }],
      },
    });
    assert.equal(m.status, 201, m.text);
    const s = await signup(gw.url);
    session = s.token;
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100 } });
    key = (await createKey(gw.url, s.token)).api_key;
  });
  after(async () => {
    await gw.destroy();
    await up.close();
  });

  const understand = (model: string, text: string, sessionId = `s-${Math.random()}`) =>
    call(gw.url, 'POST', '/v1/understand', { token: key, body: { model, session_id: sessionId, text } });

  it('without a route (intent-demo), an unresolved turn stays UNKNOWN/AMBIGUOUS and no llm is called', async () => {
    const before = up.requests.length;
    const r = await understand('intent-demo', GIBBERISH);
    assert.equal(r.status, 200, r.text);
    assert.ok(['UNKNOWN', 'AMBIGUOUS', 'OUT_OF_SCOPE'].includes(r.body.classification), r.text);
    assert.notEqual(r.body.classifier_used, 'llm_fallback');
    assert.equal(up.requests.length, before);
  });

  it('resolves an unresolved turn with an answer constrained to the pack ids', async () => {
    up.next({ reply: 'BANKING.TXN.DOUBLE_DEBIT' });
    const r = await understand('intent-llm', GIBBERISH);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.classification, 'KNOWN');
    assert.equal(r.body.classifier_used, 'llm_fallback');
    assert.equal(r.body.intent.id, 'BANKING.TXN.DOUBLE_DEBIT');
    assert.ok(r.body.candidate_intents.some((c: any) => c.source === 'llm_fallback' && c.id === 'BANKING.TXN.DOUBLE_DEBIT'));
    const sent = up.calls('/v1/chat/completions').at(-1)!;
    assert.equal(sent.body.model, 'classifier-llm');
    assert.equal(sent.headers.authorization, 'Bearer sk-up-intent');
    assert.ok(String(sent.body.messages[0].content).includes('BANKING.ATM.CASH_NOT_DISPENSED'), 'the prompt lists the pack ids');
    assert.equal(sent.body.messages[1].content, GIBBERISH);
  });

  it('an answer outside the pack, or a failing upstream, leaves the earlier result; the turn is still answered', async () => {
    up.next({ reply: 'DROP TABLE intents' });
    const odd = await understand('intent-llm', GIBBERISH);
    assert.equal(odd.status, 200, odd.text);
    assert.notEqual(odd.body.classification, 'KNOWN');
    assert.equal(odd.body.intent, null);
    assert.notEqual(odd.body.classifier_used, 'llm_fallback');
    up.next({ status: 500 });
    const failed = await understand('intent-llm', GIBBERISH);
    assert.equal(failed.status, 200, failed.text);
    assert.equal(failed.body.intent, null);
  });

  it('a turn the deterministic stage resolves never reaches the llm', async () => {
    const before = up.requests.length;
    const r = await understand('intent-llm', 'ATM se paise nahi nikle par account se kat gaye');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.classification, 'KNOWN');
    assert.notEqual(r.body.classifier_used, 'llm_fallback');
    assert.equal(up.requests.length, before);
  });

  it('bills each call once whichever stage answered, the llm included', async () => {
    const recs = async () => (await call(gw.url, 'GET', '/portal/usage/records?limit=100', { token: session })).body.data as any[];
    for (let i = 0; i < 50; i++) {
      if ((await recs()).length >= 5) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const intentRecs = (await recs()).filter((r) => r.model === 'intent-llm');
    assert.equal(intentRecs.length, 4, JSON.stringify(intentRecs.map((r) => r.request_id)));
    for (const r of intentRecs) {
      assert.equal(r.calls, 1);
      assert.equal(r.cost_microcents, 100_000);
    }
  });
});
