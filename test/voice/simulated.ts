// The set-up the voice-call test files share (calls.test.ts, calls-agents-and-ends.test.ts,
// calls-api.test.ts, llm-stream.test.ts, endpointing.test.ts, each a process of its own so that their
// real-time calls run side by side): a gateway whose simulated callees follow CALLEES (and the
// file's own), a scripted stt upstream, a fake LLM, the voice model `voice-test` (6 cents a minute:
// 10 s a cent) and a funded account.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, type TestGateway } from '../helper.ts';
import { FakeServer, sendAnswer } from '../fakes/fake-server.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import type { CalleeScript } from '../../src/config.ts';
import type { Logger } from 'pino';
import { place, startVoiceGateway, voiceAccount, type VoiceAccount } from './helpers.ts';

/** The scripted recogniser: each utterance it is sent gets the next text (then nothing). */
export class ScriptedStt {
  readonly heard: string[] = [];
  private queue: string[] = [];
  constructor(readonly server: FakeServer) {}
  static async start(): Promise<ScriptedStt> {
    let self!: ScriptedStt;
    const server = await FakeServer.start(async (x) => {
      const text = self.queue.shift() ?? '';
      self.heard.push(text);
      sendAnswer(x, { text });
    });
    self = new ScriptedStt(server);
    return self;
  }
  say(...texts: string[]): void {
    this.queue = [...texts];
  }
}

/**
 * The model `stt-scripted` (the scripted recogniser) and a voice model `id` on it, with the demo
 * intent pack, tts-local and 6 cents a minute, whose carriers are `routes`.
 */
export async function putScriptedVoice(base: string, stt: ScriptedStt, id: string, routes: unknown[]): Promise<void> {
  const put = (model: string, body: unknown) => call(base, 'PUT', `/admin/models/${model}`, { token: ADMIN_TOKEN, body });
  const scripted = {
    type: 'stt',
    owned_by: 'test',
    languages: ['en-IN'],
    pricing: { cents_per_minute: 1 },
    routes: [{ provider: 'openai', base_url: `${stt.server.url}/v1`, api_key: 'k', upstream_model: 'gpt-4o-transcribe' }],
  };
  assert.ok([200, 201].includes((await put('stt-scripted', scripted)).status));
  assert.equal((await put(id, scriptedVoiceModel(routes))).status, 201);
}

/** The llm model `chat-test` on the fake OpenAI upstream `llm` (the LLM agents' model). */
export async function putChatModel(base: string, llm: { url: string }): Promise<void> {
  const chat = {
    type: 'llm',
    owned_by: 'test',
    pricing: { input_cents_per_mtok: 1, output_cents_per_mtok: 1 },
    routes: [{ provider: 'openai', base_url: `${llm.url}/v1`, upstream_model: 'gpt-test' }],
  };
  assert.equal((await call(base, 'PUT', '/admin/models/chat-test', { token: ADMIN_TOKEN, body: chat })).status, 201);
}

/** The voice model on `stt-scripted` (see putScriptedVoice), with `extra` fields. */
export const scriptedVoiceModel = (routes: unknown[], extra: Record<string, unknown> = {}) => ({
  type: 'voice',
  owned_by: 'test',
  stt_model: 'stt-scripted',
  tts_model: 'tts-local',
  intent_model: 'intent-demo',
  price_per_minute_cents: 6,
  countries: ['IN'],
  languages: ['en-IN', 'hi-IN'],
  voices: ['en-us', 'hi'],
  max_duration_seconds: 600,
  pricing: {},
  routes,
  ...extra,
});

export const CALLEES: CalleeScript[] = [
  { to: '+919800000002', answer: 'busy', ring_ms: 100, steps: [] },
  { to: '+919800000003', answer: 'no_answer', steps: [] },
  { to: '+919800000005', answer: 'fail', ring_ms: 100, steps: [] },
  // Answers, listens to the greeting, reports the ATM, says yes, hangs up after the confirmation.
  {
    to: '+919800000010',
    answer: 'answer',
    ring_ms: 200,
    steps: [
      { wait_agent: 'done', ms: 200 },
      { say: 'the ATM did not give money but my account got debited' },
      { wait_agent: 'done', ms: 200 },
      { say: 'yes please' },
      { wait_agent: 'done', ms: 200 },
      { hangup: true },
    ],
  },
  // Barges in 800 ms into the greeting, then hangs up once the agent answered.
  {
    to: '+919800000011',
    answer: 'answer',
    ring_ms: 100,
    steps: [{ wait_agent: 'speaking', ms: 800 }, { say: 'wait I have a question about my card' }, { wait_agent: 'done', ms: 200 }, { hangup: true }],
  },
  // Listens to the opening, says one thing, listens to the answer, hangs up. It waits 600 ms after
  // the opening and 1.5 s after the answer: a gateway held up a few hundred ms on a loaded machine
  // (the test suite) would otherwise look done to it, between the opening's lines or between two
  // sentences of a streamed LLM answer, and it would barge in or hang up on the rest.
  {
    to: '+919800000013',
    answer: 'answer',
    ring_ms: 100,
    steps: [{ wait_agent: 'done', ms: 600 }, { say: 'what is the weather like today' }, { wait_agent: 'done', ms: 1500 }, { hangup: true }],
  },
  // Listens to the greeting to its end, then hangs up.
  { to: '+919800000012', answer: 'answer', ring_ms: 100, steps: [{ wait_agent: 'done', ms: 300 }, { hangup: true }] },
  // Answers and stays silent on the line.
  { to: '*', answer: 'answer', ring_ms: 100, steps: [] },
];

export interface SimulatedVoice {
  gw: TestGateway;
  stt: ScriptedStt;
  acc: VoiceAccount;
  llm: Awaited<ReturnType<typeof startOpenAIUpstream>>;
  dial(to: string, body?: Record<string, unknown>, who?: VoiceAccount, headers?: Record<string, string>): ReturnType<typeof place>;
}

/**
 * Registers the suite's before and after; the object's fields are set once before has run. A file's
 * own callees (`extra`) come before CALLEES (whose last, `*`, answers any other number).
 */
export function simulatedVoice(extra: CalleeScript[] = [], opts: { logger?: Logger } = {}): SimulatedVoice {
  const v = {} as SimulatedVoice;
  before(async () => {
    v.stt = await ScriptedStt.start();
    v.llm = await startOpenAIUpstream();
    const callees = [...extra, ...CALLEES];
    v.gw = await startVoiceGateway(
      callees,
      {
        // A short credit floor: the credit guard's call lasts seconds, not a minute.
        voice: { maxConcurrentCalls: 3, minAffordableSeconds: 10, mediaTimeoutMs: 10_000, simulator: { callees } },
        webhooks: { allowPrivateNetworks: true, allowHttp: true, sweepIntervalMs: 200 }, // a call's webhook_id on a loopback receiver
      },
      undefined,
      opts,
    );
    await putScriptedVoice(v.gw.url, v.stt, 'voice-test', [{ provider: 'simulator' }]);
    await putChatModel(v.gw.url, v.llm);
    v.acc = await voiceAccount(v.gw, 1000);
  });
  after(async () => {
    await v.gw?.destroy();
    await v.stt?.server.close();
    await v.llm?.close();
  });
  v.dial = (to, body = {}, who = v.acc, headers = {}) => place(v.gw, who.key, { model: 'voice-test', to, ...body }, headers);
  return v;
}
