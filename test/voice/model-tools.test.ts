// Tools declared per voice model (issue 41 §5): the operator's `agent_tools`, saved through
// /admin/models (a bad declaration is 400 naming the field), offered to the calls' LLM agents and
// sent to the operator's endpoint signed with the secret in the environment variable the model names,
// with the webhooks' scheme. Through the simulator over real sockets, the fake OpenAI upstream
// calling the tool: the operator's receiver gets the request signed with that secret and its answer
// is the LLM's next turn; a call's own tools are offered beside the model's (the call's replacing a
// model tool of its name); the model's url takes a pack's actions (the pack's GEN.HOLD said, or the
// gateway's wordings for a pack without them); a hybrid agent's LLM turns get the model's tools; the
// secret is in no log line and no model view, the URLs not in /v1/models.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { gatewayWording } from '../../src/voice/tools.ts';
import { ADMIN_TOKEN, call } from '../helper.ts';
import { createLogger } from '../../src/logger.ts';
import { startReceiver, verify, type Receiver } from '../webhooks/receiver.ts';
import { ended, waitForCall } from './helpers.ts';
import { CALLEES, scriptedVoiceModel, simulatedVoice } from './simulated.ts';

const SECRET_ENV = 'GW_TEST_AGENT_TOOLS_SECRET';
const SECRET = `opsec_${Math.random().toString(36).slice(2)}_never-logged`;
const LLM_AGENT = { agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Be brief.' }, first_message: { mode: 'wait_for_callee' } };
const tool = (name: string, description: string, url?: string) => ({
  type: 'function',
  function: { name, description, parameters: { type: 'object', properties: { query: { type: 'string' } } } },
  ...(url ? { url } : {}),
});

const DISPUTE = CALLEES.find((c) => c.to === '+919800000010')!;
/** The demo pack's GEN.HOLD. */
const PACK_HOLD = 'One moment please, I am checking that for you.';
const lines: string[] = [];
process.env[SECRET_ENV] = SECRET;

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** Answers tool requests whose signature verifies with `secret` with `body` (else 401); other posts 204. */
function endpoint(r: Receiver, secret: () => string, body: unknown): void {
  r.set((req, res, n) => {
    const got = r.received[n - 1]!;
    if (!verify(secret(), got.raw, req.headers['x-service-signature'])) return json(res, 401, { error: 'bad signature' });
    if (req.headers['x-service-event'] !== 'call.tool') return void res.writeHead(204).end();
    json(res, 200, body);
  });
}

describe('tools declared per voice model: the operator’s endpoint, signed with the secret its env var holds', () => {
  const v = simulatedVoice(
    [
      {
        to: '+919800000040',
        answer: 'answer',
        ring_ms: 100,
        steps: [{ silence_ms: 300 }, { say: 'what is my balance' }, { wait_agent: 'done', ms: 1500 }, { hangup: true }],
      },
      // The demo dispute, then the holding line and the action's reply.
      { ...DISPUTE, to: '+919800000041', steps: [...DISPUTE.steps.slice(0, -2), { wait_agent: 'done', ms: 1500 }, { hangup: true }] },
    ],
    { logger: createLogger('trace', { write: (line: string) => void lines.push(line) }) },
  );
  const put = (id: string, body: unknown) => call(v.gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body });

  it('a bad agent_tools is 400 naming the field; a non-voice model takes none', async () => {
    const base = scriptedVoiceModel([{ provider: 'simulator' }]);
    const cases: [unknown, string][] = [
      [{ signing_secret_env: SECRET_ENV }, 'agent_tools'],
      [{ tools: [tool('a', 'x')], signing_secret_env: SECRET_ENV }, 'agent_tools.tools.0.url'],
      [
        { tools: [tool('a', 'x', 'https://ops.example/a'), tool('a', 'y', 'https://ops.example/b')], signing_secret_env: SECRET_ENV },
        'agent_tools.tools.1.function.name',
      ],
      [{ url: 'ftp://ops.example/', signing_secret_env: SECRET_ENV }, 'agent_tools.url'],
      [{ tools: [tool('a', 'x', 'not a url')], signing_secret_env: SECRET_ENV }, 'agent_tools.tools.0.url'],
    ];
    for (const [agentTools, param] of cases) {
      const res = await put('voice-bad-tools', { ...base, agent_tools: agentTools });
      assert.equal(res.status, 400, `${JSON.stringify(agentTools)}: ${res.text}`);
      assert.equal(res.body.error.param, param, res.text);
    }
    // The secret is named by an env var, never given inline.
    const inline = await put('voice-bad-tools', { ...base, agent_tools: { url: 'https://ops.example/', signing_secret: SECRET } });
    assert.equal(inline.status, 400, inline.text);
    const chat = await put('chat-bad-tools', {
      type: 'llm',
      owned_by: 'test',
      pricing: { input_cents_per_mtok: 1 },
      routes: [{ provider: 'openai', base_url: 'http://127.0.0.1:1/v1', upstream_model: 'x' }],
      agent_tools: { url: 'https://ops.example/', signing_secret_env: SECRET_ENV },
    });
    assert.equal([chat.status, chat.body.error?.param].join(' '), '400 agent_tools', chat.text);
  });

  it("an LLM agent's call to a model tool reaches the operator signed with the env secret, and the answer is its next reply", async () => {
    const operator = await startReceiver();
    try {
      endpoint(operator, () => SECRET, { balance: '700 rupees' });
      const model = scriptedVoiceModel([{ provider: 'simulator' }], {
        agent_tools: {
          tools: [tool('get_balance', 'The balance')],
          url: `${operator.url}/tools`,
          signing_secret_env: SECRET_ENV,
          hold_message: 'Checking that now.',
        },
      });
      assert.equal((await put('voice-tools', model)).status, 201);
      v.stt.say('what is my balance');
      const chats = v.llm.calls('/v1/chat/completions').length;
      const res = await v.dial('+919800000040', { model: 'voice-tools', ...LLM_AGENT });
      assert.equal(res.status, 202, res.text);
      const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 40_000);
      const result = '{"balance":"700 rupees"}';
      assert.deepEqual(
        c.transcript.map((t: { role: string; text: string }) => [t.role, t.text]),
        [
          ['callee', 'what is my balance'],
          ['agent', 'Checking that now.'],
          ['tool', 'get_balance: ok'],
          ['agent', `The tool said: ${result}`],
        ],
      );
      const [sent] = operator.received.filter((x) => x.headers['x-service-event'] === 'call.tool');
      assert.ok(sent, 'the operator was asked');
      assert.ok(verify(SECRET, sent.raw, sent.headers['x-service-signature']), 'signed with the env var’s secret');
      assert.deepEqual([sent.json.name, sent.json.call_id, sent.json.model], ['get_balance', c.id, 'voice-tools']);
      const [first, second] = v.llm.calls('/v1/chat/completions').slice(chats) as { body: any }[];
      assert.deepEqual(first!.body.tools, [{ type: 'function', function: tool('get_balance', 'The balance').function }], 'offered without its URL');
      assert.deepEqual(second!.body.messages.at(-1), { role: 'tool', tool_call_id: 'call_fake_1', content: result });
    } finally {
      await operator.close();
    }
  });

  it("a call's own tools are offered beside the model's (the call's replacing a model tool of its name), each signed with its own secret", async () => {
    const operator = await startReceiver();
    const integrator = await startReceiver();
    try {
      endpoint(operator, () => SECRET, { from: 'operator' });
      const hook = await call(v.gw.url, 'POST', '/portal/webhooks', { token: v.acc.session, body: { url: integrator.url, events: ['call.ended'] } });
      assert.equal(hook.status, 201, hook.text);
      endpoint(integrator, () => hook.body.secret, { from: 'integrator' });
      const model = scriptedVoiceModel([{ provider: 'simulator' }], {
        agent_tools: {
          tools: [tool('get_balance', 'The operator’s balance'), tool('block_card', 'Blocks the card')],
          url: `${operator.url}/tools`,
          signing_secret_env: SECRET_ENV,
        },
      });
      assert.equal((await put('voice-tools-both', model)).status, 201);
      v.stt.say('what is my balance');
      const chats = v.llm.calls('/v1/chat/completions').length;
      const own = [tool('lookup_order', 'An order'), tool('get_balance', 'The integrator’s balance')];
      const res = await v.dial('+919800000040', { model: 'voice-tools-both', ...LLM_AGENT, tools: own, tool_url: integrator.url, webhook_id: hook.body.id });
      assert.equal(res.status, 202, res.text);
      const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 40_000);
      const [first] = v.llm.calls('/v1/chat/completions').slice(chats) as { body: any }[];
      assert.deepEqual(
        first!.body.tools.map((t: any) => [t.function.name, t.function.description]),
        [
          ['lookup_order', 'An order'],
          ['get_balance', 'The integrator’s balance'],
          ['block_card', 'Blocks the card'],
        ],
      );
      // The fake LLM calls the first tool offered: the call's, to the integrator, signed with the webhook's secret.
      assert.equal(c.transcript.find((t: any) => t.role === 'tool')?.tool.result, '{"from":"integrator"}', JSON.stringify(c.transcript));
      const [sent] = integrator.received.filter((x) => x.headers['x-service-event'] === 'call.tool');
      assert.ok(sent && verify(hook.body.secret, sent.raw, sent.headers['x-service-signature']));
      assert.equal(operator.received.length, 0, 'nothing went to the operator');
    } finally {
      await operator.close();
      await integrator.close();
    }
  });

  it("a pack's business action goes to the model's url (the call names none), signed with the env secret; a hybrid agent's LLM turn gets the model's tools and the pack's GEN.HOLD", async () => {
    const operator = await startReceiver();
    try {
      endpoint(operator, () => SECRET, { dispute_id: 'D-77' });
      const model = scriptedVoiceModel([{ provider: 'simulator' }], {
        agent_tools: { tools: [tool('get_balance', 'The balance')], url: `${operator.url}/ops`, signing_secret_env: SECRET_ENV },
      });
      assert.equal((await put('voice-tools-pack', model)).status, 201);
      v.stt.say('ATM did not give money but my account got debited', 'haan');
      const pack = await v.dial('+919800000041', { model: 'voice-tools-pack' });
      assert.equal(pack.status, 202, pack.text);
      const c = await waitForCall(v.gw, v.acc.key, pack.body.id, ended, 60_000);
      assert.deepEqual(
        c.transcript.slice(4).map((t: any) => [t.role, t.response_id ?? t.text]),
        [
          ['agent', PACK_HOLD],
          ['tool', 'CREATE_DISPUTE: ok'],
          ['agent', 'BANKING.DISPUTE.CREATED'],
        ],
        JSON.stringify(c.transcript),
      );
      const [action] = operator.received.filter((x) => x.headers['x-service-event'] === 'call.tool');
      assert.ok(action && verify(SECRET, action.raw, action.headers['x-service-signature']));
      assert.deepEqual([action.json.type, action.json.name], ['action', 'CREATE_DISPUTE']);

      v.stt.say('what is the weather like today');
      const hybrid = { type: 'hybrid', intent_model: 'intent-demo', llm_model: 'chat-test', system_prompt: 'Be brief.' };
      const res = await v.dial('+919800000040', { model: 'voice-tools-pack', agent: hybrid, first_message: { mode: 'wait_for_callee' } });
      assert.equal(res.status, 202, res.text);
      const h = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 40_000);
      assert.deepEqual(
        h.transcript.map((t: any) => [t.role, t.text]),
        [
          ['callee', 'what is the weather like today'],
          ['agent', PACK_HOLD],
          ['tool', 'get_balance: ok'],
          ['agent', 'The tool said: {"dispute_id":"D-77"}'],
        ],
      );
    } finally {
      await operator.close();
    }
  });

  it("a pack without GEN.HOLD and GEN.ACTION_FAILED: the gateway's holding line and apology are said", async () => {
    const operator = await startReceiver();
    try {
      endpoint(operator, () => 'not-the-secret', {}); // every request refused (401): the action fails
      const demo = JSON.parse(readFileSync(new URL('../../config/packs/demo-banking-telecom.json', import.meta.url), 'utf8'));
      const { 'GEN.HOLD': _hold, 'GEN.ACTION_FAILED': _failed, ...responses } = demo.responses;
      const bare = { ...demo, id: 'demo-without-hold', responses };
      assert.equal((await call(v.gw.url, 'PUT', '/admin/intent-packs/demo-without-hold', { token: ADMIN_TOKEN, body: bare })).status, 201);
      const intent = {
        type: 'intent',
        owned_by: 'test',
        languages: ['en-IN', 'hi-IN'],
        pack: 'demo-without-hold',
        pricing: { cents_per_call: 0.1 },
        routes: [],
      };
      assert.equal((await put('intent-bare', intent)).status, 201);
      const model = scriptedVoiceModel([{ provider: 'simulator' }], {
        intent_model: 'intent-bare',
        agent_tools: { url: `${operator.url}/ops`, signing_secret_env: SECRET_ENV },
      });
      assert.equal((await put('voice-tools-bare', model)).status, 201);
      v.stt.say('ATM did not give money but my account got debited', 'haan');
      const res = await v.dial('+919800000041', { model: 'voice-tools-bare' });
      assert.equal(res.status, 202, res.text);
      const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 60_000);
      assert.deepEqual(
        c.transcript.slice(4).map((t: any) => [t.role, t.text]),
        [
          ['agent', gatewayWording('hold', 'en-IN')],
          ['tool', 'CREATE_DISPUTE: refused'],
          ['agent', gatewayWording('failed', 'en-IN')],
        ],
        JSON.stringify(c.transcript),
      );
    } finally {
      await operator.close();
    }
  });

  it('the secret is in no log line and no model view; /v1/models names the tools, not their URLs', async () => {
    const admin = await call(v.gw.url, 'GET', '/admin/models', { token: ADMIN_TOKEN });
    const stored = admin.body.data.find((m: any) => m.id === 'voice-tools');
    assert.equal(stored.agent_tools.signing_secret_env, SECRET_ENV);
    assert.ok(!admin.text.includes(SECRET));
    const listed = await call(v.gw.url, 'GET', '/v1/models', { token: v.acc.key });
    const pub = listed.body.data.find((m: any) => m.id === 'voice-tools');
    assert.deepEqual(pub.agent_tools, ['get_balance']);
    const one = await call(v.gw.url, 'GET', '/v1/models/voice-tools', { token: v.acc.key });
    for (const text of [listed.text, one.text]) {
      assert.ok(!text.includes(SECRET) && !text.includes('/tools') && !text.includes(SECRET_ENV), text);
    }
    assert.ok(lines.length > 50, 'the calls were logged');
    assert.equal(lines.filter((l) => l.includes(SECRET)).length, 0);
  });

  it('a model whose secret variable is unset refuses its LLM calls 503 model_misconfigured, naming neither variable nor secret', async () => {
    const model = scriptedVoiceModel([{ provider: 'simulator' }], {
      agent_tools: { url: 'http://127.0.0.1:9/tools', tools: [tool('x', 'y')], signing_secret_env: 'GW_TEST_UNSET_TOOLS_SECRET' },
    });
    assert.equal((await put('voice-tools-unset', model)).status, 201);
    const res = await v.dial('+919800000040', { model: 'voice-tools-unset', ...LLM_AGENT });
    assert.equal([res.status, res.body.error?.code].join(' '), '503 model_misconfigured', res.text);
    assert.ok(!res.text.includes('GW_TEST_UNSET_TOOLS_SECRET'));
  });
});
