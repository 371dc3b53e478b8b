// The LLM agent's turns in time, through the simulator over real sockets: its chat goes through the
// router's streaming path, each sentence is synthesized and played as it completes, so the first
// audio leaves before the LLM has finished; a barge-in closes the LLM's upstream request and drops
// the syntheses still to come.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RecordedRequest } from '../fakes/fake-server.ts';
import { ended, waitForCall } from './helpers.ts';
import { simulatedVoice } from './simulated.ts';
import { readForm } from '../fakes/audio.ts';

const LLM_AGENT = { agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Be brief.' }, first_message: { mode: 'wait_for_callee' } };
/** Three sentences, 22 words: one stream chunk each, 65 ms apart, about 1.5 s in all. */
const THREE_SENTENCES = 'Your account is active and in good standing. The last payment reached us on Monday morning. Is there anything else I can help with?';
/** Nine sentences at 150 ms a word: about 10 s unless something closes it. */
const LONG_REPLY = Array.from({ length: 9 }, (_, i) => `This is sentence number ${i + 1} of a long answer.`).join(' ');

describe('the LLM agent streams: first sentence first, barge-in closes the chat', () => {
  const v = simulatedVoice([
    // Speaks first, listens to the reply, hangs up.
    {
      to: '+919800000020',
      answer: 'answer',
      ring_ms: 100,
      steps: [{ silence_ms: 300 }, { say: 'tell me about my account' }, { wait_agent: 'done', ms: 300 }, { hangup: true }],
    },
    // Speaks first, then speaks over the reply 600 ms into it.
    {
      to: '+919800000021',
      answer: 'answer',
      ring_ms: 100,
      steps: [
        { silence_ms: 300 },
        { say: 'tell me about my account' },
        { wait_agent: 'speaking', ms: 600 },
        { say: 'stop I have another question' },
        { wait_agent: 'done', ms: 300 },
        { hangup: true },
      ],
    },
  ]);

  /** The next chat request the fake LLM receives, with the time its exchange ended (answered or closed). */
  async function nextChat(): Promise<{ rec: RecordedRequest; endedAt: Promise<number> }> {
    const seen = v.llm.calls('/v1/chat/completions').length;
    const deadline = Date.now() + 30_000;
    while (v.llm.calls('/v1/chat/completions').length === seen && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const rec = v.llm.calls('/v1/chat/completions')[seen];
    assert.ok(rec, 'the LLM was asked');
    return { rec, endedAt: rec.ended.then(() => Date.now()) };
  }

  it('llm agent: streams the chat and plays the first sentence before the LLM has finished; the turn is the whole reply', async () => {
    v.stt.say('tell me about my account');
    v.llm.next({ reply: THREE_SENTENCES, chunkDelayMs: 65 });
    const res = await v.dial('+919800000020', LLM_AGENT);
    assert.equal(res.status, 202, res.text);
    const { rec, endedAt } = await nextChat();
    const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 40_000);
    assert.equal(rec.body.stream, true, 'the streaming chat path');
    assert.deepEqual(
      c.transcript.map((t: { role: string; text: string }) => [t.role, t.text]),
      [
        ['callee', 'tell me about my account'],
        ['agent', THREE_SENTENCES],
      ],
    );
    assert.deepEqual([c.transcript[1].heard_text, c.transcript[1].interrupted], [THREE_SENTENCES, false]);
    // The turn's latency runs from the end of the callee's speech to the first frame; from the text
    // recognised (before the chat request left) it is shorter than the LLM's stream, so the first
    // frame left while it still streamed. Its stages put the wait for the first sentence (7 more
    // chunks, 65 ms apart, after the first) in `synthesis`, after the first chunk's `agent`.
    const latency = c.metrics.turn_latency_ms.p50 as number;
    const { stages } = c.transcript[1];
    const fromText = stages.agent_ms + stages.synthesis_ms + stages.first_frame_ms;
    const streamed = (await endedAt) - rec.at;
    assert.equal(c.transcript[1].latency_ms, latency);
    assert.ok(streamed >= 1200, `the fake streamed for ${streamed} ms`);
    assert.ok(fromText < streamed, `text → first frame ${fromText} ms, the LLM streamed for ${streamed} ms`);
    assert.ok(stages.synthesis_ms >= 400, `the first sentence's wait is synthesis's: ${JSON.stringify(stages)}`);
    console.log(
      `# streamed LLM turn: latency ${latency} ms (end of callee speech → first frame), stages ${JSON.stringify(stages)}; the LLM's stream took ${streamed} ms`,
    );
  });

  it('llm agent: a barge-in closes the LLM upstream request and drops the syntheses still to come', async () => {
    v.stt.say('tell me about my account', 'stop I have another question');
    v.llm.next({ reply: LONG_REPLY, chunkDelayMs: 150 }, { reply: 'Sure, go ahead.' });
    const sttBefore = v.stt.server.requests.length;
    const res = await v.dial('+919800000021', LLM_AGENT);
    const { rec, endedAt } = await nextChat();
    const closedAfter = (await endedAt) - rec.at;
    assert.equal(rec.closedEarly, true, 'the gateway closed the stream');
    assert.ok(closedAfter < 7000, `closed ${closedAfter} ms in, not at the stream's end (~10 s)`);
    const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 40_000);
    const cut = c.transcript[1];
    assert.equal(cut.role, 'agent', JSON.stringify(c.transcript));
    assert.equal(cut.interrupted, true, JSON.stringify(cut));
    assert.ok(LONG_REPLY.startsWith(cut.text) && cut.text.length < LONG_REPLY.length, `what was synthesized before the cut: ${cut.text}`);
    assert.ok(cut.text.startsWith(cut.heard_text) && cut.heard_text.length < cut.text.length, JSON.stringify(cut));
    assert.deepEqual(
      c.transcript.slice(2).map((t: { text: string }) => t.text),
      ['stop I have another question', 'Sure, go ahead.'],
    );
    assert.equal(c.metrics.interruptions, 1);
    // The recogniser heard each utterance with the agent's last words as its prompt: none before
    // the first (the agent waited), the reply as far as it was said before the second.
    const prompts = await Promise.all(
      v.stt.server.requests.slice(sttBefore).map(async (r) => (await readForm(r.raw, r.headers['content-type']))!.fields.get('prompt')?.[0]),
    );
    assert.equal(prompts.length, 2, JSON.stringify(prompts));
    assert.equal(prompts[0], undefined);
    assert.ok(LONG_REPLY.startsWith(prompts[1]!) && prompts[1]!.startsWith(cut.heard_text), `the cut reply, as the history has it: ${prompts[1]}`);
    // The next turn's history has what the LLM said before the cut, then the callee.
    const second = v.llm.calls('/v1/chat/completions').at(-1)!.body as { messages: { role: string; content: string }[] };
    assert.deepEqual(
      second.messages.slice(1).map((m) => m.role),
      ['user', 'assistant', 'user'],
    );
  });
});
