// Shutdown with streams still open: a raw audio stream whose client stopped reading (its writes
// never drain) and a chat SSE stream whose upstream is still talking. The gateway ends both after
// `http.shutdownGraceMs` and completes its shutdown soon after, and each stream is billed once, as
// a client that left: the speech for the characters whose audio was sent, the chat for the tokens
// streamed. Both are read back from a gateway restarted on the same data directory.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, call, startTestGateway, type TestGateway } from '../helper.ts';
import type { FakeServer } from '../fakes/fake-server.ts';
import { startSpeechUpstream } from '../fakes/openai-speech-upstream.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import { fundedKey, has } from '../synthesis/helpers.ts';
import { openSocket } from './raw-socket.ts';

const skip = has('ffmpeg') ? false : 'needs ffmpeg (scripts/install-debian-packages.sh)';
const GRACE_MS = 600;
const INPUT = 'Your call is important to us. '.repeat(200); // 6000 characters: 17 MB of 24 kHz PCM, more than loopback buffers hold

describe('shutdown ends streams still open after the grace, and bills them once', { skip }, () => {
  let speechUp: FakeServer;
  let chatUp: FakeServer;
  let gw: TestGateway;
  let restarted: TestGateway | undefined;

  before(async () => {
    [speechUp, chatUp] = await Promise.all([startSpeechUpstream(), startOpenAIUpstream()]);
  });
  after(async () => {
    await restarted?.destroy();
    await Promise.all([speechUp.close(), chatUp.close()]);
  });

  it('a client that stopped reading and a stream still running do not hold shutdown past the grace', async () => {
    gw = await startTestGateway({ http: { shutdownGraceMs: GRACE_MS } });
    const { apiKey, session } = await fundedKey(gw, 1000);
    const models: [string, Record<string, unknown>][] = [
      [
        'tts-up',
        {
          type: 'tts',
          owned_by: 'openai',
          voices: ['nova'],
          max_input_chars: 10_000,
          pricing: { cents_per_1k_chars: 1 },
          routes: [{ provider: 'openai', base_url: `${speechUp.url}/v1`, api_key: 'sk-up', upstream_model: 'tts' }],
        },
      ],
      [
        'chat-up',
        {
          type: 'llm',
          owned_by: 'openai',
          context_window: 4096,
          max_output_tokens: 4096,
          pricing: { input_cents_per_mtok: 10_000, output_cents_per_mtok: 10_000 },
          routes: [{ provider: 'openai', base_url: `${chatUp.url}/v1`, api_key: 'sk-up', upstream_model: 'gpt-up' }],
        },
      ],
    ];
    for (const [id, body] of models) assert.ok((await call(gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body })).status < 300);

    // The speech client reads the first bytes, then stops reading (its socket paused, never closed).
    const socket = await openSocket(gw.url);
    const body = JSON.stringify({ model: 'tts-up', input: INPUT, voice: 'nova', response_format: 'pcm' });
    socket.write(
      `POST /v1/audio/speech HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${apiKey}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.pause();
    socket.on('error', () => {});
    // The chat stream's upstream sends a word every 100 ms, for 50 s.
    chatUp.next({ chunkDelayMs: 100, reply: 'word '.repeat(500).trim() });
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-up', stream: true, messages: [{ role: 'user', content: 'talk' }] }),
    });
    const reading = (async () => {
      let text = '';
      try {
        for await (const c of chat.body as unknown as AsyncIterable<Uint8Array>) text += Buffer.from(c).toString();
      } catch {
        // cut by the shutdown
      }
      return text;
    })();
    await sleep(500); // the speech socket's buffers fill; the chat stream has sent a few words

    const started = Date.now();
    await gw.close();
    const took = Date.now() - started;
    assert.ok(took < GRACE_MS + 1500, `shutdown took ${took} ms`);
    assert.ok(took >= GRACE_MS - 50, `the streams had their grace (${took} ms)`);
    const streamed = await reading;
    assert.ok(streamed.includes('word'), `the chat stream had sent words: ${chat.status} ${streamed.slice(0, 300)}`);
    assert.ok(!streamed.includes('[DONE]'), 'and was cut, not completed');
    socket.destroy();

    // Restarted on the same data: one usage record each, as a client that left, charged for what was sent.
    restarted = await startTestGateway({}, { dir: gw.dir });
    const records = (await call(restarted.url, 'GET', '/portal/usage/records?limit=100', { token: session })).body.data as Record<string, any>[];
    const speech = records.filter((r) => r.model === 'tts-up');
    const chats = records.filter((r) => r.model === 'chat-up');
    assert.equal(speech.length, 1, JSON.stringify(records));
    assert.equal(chats.length, 1, JSON.stringify(records));
    assert.equal(speech[0]!.status, 'client_closed');
    const characters = speech[0]!.characters as number;
    assert.ok(characters > 0 && characters < 6000, `speech charged for ${characters} characters of 6000`);
    assert.equal(speech[0]!.cost_microcents, characters * 1000);
    assert.equal(chats[0]!.status, 'client_closed');
    assert.ok(chats[0]!.completion_tokens > 0 && chats[0]!.completion_tokens < 500, `${chats[0]!.completion_tokens} tokens streamed`);
  });
});
