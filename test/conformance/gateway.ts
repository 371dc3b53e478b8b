// The gateway the conformance suites drive, as an OpenAI client meets it: fake OpenAI upstreams
// (chat and embeddings, audio, speech) behind four models (`chat`, `emb`, `whisper`, `tts`; the
// built-in `stt-local` streams), a funded account with its key, and a second key limited to one
// request a minute (for the per-key 429).
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { startSpeechUpstream } from '../fakes/openai-speech-upstream.ts';

export interface ConformanceGateway {
  gw: TestGateway;
  up: FakeServer;
  speechUp: FakeServer;
  key: string;
  limitedKey: string;
  close(): Promise<void>;
}

export async function startConformanceGateway(): Promise<ConformanceGateway> {
  const [up, speechUp] = await Promise.all([startOpenAIUpstream({ apiKey: 'sk-up' }), startSpeechUpstream()]);
  const gw = await startTestGateway();
  const route = { provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-up' };
  const models: [string, object][] = [
    [
      'chat',
      {
        type: 'llm',
        owned_by: 'acme',
        context_window: 8192,
        max_output_tokens: 1024,
        tools: true,
        pricing: { input_cents_per_mtok: 15, output_cents_per_mtok: 60 },
        routes: [{ ...route, upstream_model: 'gpt-up' }],
      },
    ],
    [
      'emb',
      {
        type: 'embedding',
        owned_by: 'acme',
        context_window: 8192,
        pricing: { input_cents_per_mtok: 2 },
        routes: [{ ...route, upstream_model: 'text-embedding-3-small' }],
      },
    ],
    [
      'whisper',
      {
        type: 'stt',
        owned_by: 'acme',
        languages: ['en-US', 'hi-IN'],
        modes: ['transcribe', 'translate'],
        timestamps: 'word',
        pricing: { cents_per_minute: 0.6 },
        routes: [{ ...route, upstream_model: 'whisper-1' }],
      },
    ],
    [
      'tts',
      {
        type: 'tts',
        owned_by: 'acme',
        voices: ['nova'],
        pricing: { cents_per_1k_chars: 1 },
        routes: [{ provider: 'openai', base_url: `${speechUp.url}/v1`, api_key: 'sk-up', upstream_model: 'tts-1' }],
      },
    ],
  ];
  for (const [id, body] of models) {
    const res = await call(gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body });
    assert.ok(res.status < 300, res.text);
  }
  const s = await signup(gw.url);
  assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 10_000 } })).status, 201);
  const key = (await createKey(gw.url, s.token)).api_key;
  const limited = await createKey(gw.url, s.token, { name: 'limited' });
  assert.equal((await call(gw.url, 'PATCH', `/admin/keys/${limited.id}`, { token: ADMIN_TOKEN, body: { rpm: 1 } })).status, 200);
  return {
    gw,
    up,
    speechUp,
    key,
    limitedKey: limited.api_key,
    async close() {
      await gw.destroy();
      await up.close();
      await speechUp.close();
    },
  };
}
