// Exotel's streams as they come (issue 39, item 8), against the fake Exotel (test/fakes/exotel.ts)
// over real loopback sockets: the Voicebot stream's `media_format` honoured (a 16 kHz stream heard
// at its rate and answered at it; a format the gateway cannot take refused by name, the call ended
// `media_format_unsupported`), and the carrier's leg of a call cancelled while it rang ended when
// Exotel answers it, not left in the dead air Exotel bills. The streams here are the test's own
// sockets, opened with the token the gateway gave Exotel, so the audio sent is exactly known.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { call, type TestGateway } from '../helper.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import type { SpeechClip } from '../../src/speech/clip.ts';
import { loadResamplers } from '../../src/speech/resample.ts';
import { ended, localSpeech, place, startVoiceGateway, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';
import { CALLEES, putScriptedVoice, ScriptedStt } from './simulated.ts';

const ROUTE = { provider: 'exotel', account_sid: 'acme1', api_key: 'exo-key', api_token: 'exo-token', from: '+918047491899' };
const SPOKEN = 'the ATM did not give money but my account got debited';

const OWN_CALLEES = [
  // Answers, but its stream is the test's (Exotel's socket never opens).
  { to: '+919800000061', answer: 'answer', ring_ms: 100, stream: false, steps: [] },
  // Rings 2.5 s, then answers and stays on the line.
  { to: '+919800000062', answer: 'answer', ring_ms: 2500, steps: [] },
];

/** The seconds of audio in the WAV of an stt request's multipart body. */
function wavSeconds(raw: Buffer): number {
  const riff = raw.indexOf('RIFF');
  assert.ok(riff >= 0, 'a WAV in the upload');
  const rate = raw.readUInt32LE(riff + 24);
  const data = raw.indexOf('data', riff + 12);
  return raw.readUInt32LE(data + 4) / (rate * 2);
}

describe("Exotel's stream formats, and a cancelled call's leg", () => {
  let gw: TestGateway;
  let exotel: FakeExotel;
  let stt: ScriptedStt;
  let acc: VoiceAccount;
  let clip: SpeechClip;
  before(async () => {
    stt = await ScriptedStt.start();
    exotel = await FakeExotel.start({
      ...{ accountSid: ROUTE.account_sid, apiKey: ROUTE.api_key, apiToken: ROUTE.api_token },
      callees: [...OWN_CALLEES, ...CALLEES] as never,
      speak: () => Promise.reject(new Error('these callees do not speak')),
    });
    gw = await startVoiceGateway([], { voice: { mediaTimeoutMs: 10_000, minAffordableSeconds: 10, simulator: { callees: [] } } });
    await putScriptedVoice(gw.url, stt, 'voice-exotel', [{ ...ROUTE, base_url: exotel.url }]);
    acc = await voiceAccount(gw, 1000);
    clip = await localSpeech(gw.url, (await voiceAccount(gw, 100)).key, SPOKEN, 'en-us');
  });
  after(async () => {
    await gw?.destroy();
    await exotel?.close();
    await stt?.server.close();
  });

  /** A call answered at Exotel whose stream is ours to open: its stream URL (with the token) as the gateway gave it. */
  const answered = async (): Promise<{ id: string; streamUrl: string }> => {
    const res = await place(gw, acc.key, { model: 'voice-exotel', to: '+919800000061' });
    assert.equal(res.status, 202, res.text);
    const id = res.body.id as string;
    await waitForCall(gw, acc.key, id, (c) => c.status === 'in_progress');
    const connect = exotel.requests.find((r) => r.path.endsWith('/calls/connect') && r.form.get('customfield') === id)!;
    return { id, streamUrl: connect.form.get('streamurl')! };
  };

  /**
   * The stream as Exotel runs it at `rate`: connected and start (its media_format), 100 ms chunks in
   * real time (silence, or the audio queued by `say`), marks echoed as they come. Resolves its close code.
   */
  const stream = (streamUrl: string, mediaFormat: Record<string, string>, bytesPerMs: number) => {
    const ws = new WebSocket(streamUrl);
    const received: number[] = [];
    let queue = Buffer.alloc(0);
    let timer: NodeJS.Timeout | undefined;
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    ws.on('error', () => undefined);
    ws.on('open', () => {
      const params = Object.fromEntries(new URL(streamUrl).searchParams);
      ws.send(JSON.stringify({ event: 'connected' }));
      const start = { stream_sid: 'MZtest', call_sid: 'CAtest', account_sid: 'acme1', custom_parameters: params, media_format: mediaFormat };
      ws.send(JSON.stringify({ event: 'start', sequence_number: '1', stream_sid: 'MZtest', start }));
      let chunk = 0;
      timer = setInterval(() => {
        const size = 100 * bytesPerMs;
        const payload = Buffer.alloc(size);
        queue.copy(payload, 0, 0, Math.min(size, queue.length));
        queue = queue.subarray(Math.min(size, queue.length));
        chunk += 1;
        if (ws.readyState === WebSocket.OPEN)
          ws.send(
            JSON.stringify({
              event: 'media',
              stream_sid: 'MZtest',
              media: { chunk: String(chunk), timestamp: String(chunk * 100), payload: payload.toString('base64') },
            }),
          );
      }, 100);
    });
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as { event: string; media?: { payload: string }; mark?: { name: string } };
      if (m.event === 'media') received.push(Buffer.from(m.media!.payload, 'base64').length);
      if (m.event === 'mark') ws.send(JSON.stringify({ event: 'mark', stream_sid: 'MZtest', mark: m.mark }));
    });
    closed.finally(() => clearInterval(timer));
    return {
      received,
      closed,
      say: (audio: Buffer) => void (queue = Buffer.concat([queue, audio])),
      /** Waits for the agent's audio to come and stop (the greeting sent whole). */
      async quiet(): Promise<number> {
        for (let i = 0; i < 100 && received.length === 0; i++) await sleep(100);
        for (let n = -1; n !== received.length; ) {
          n = received.length;
          await sleep(700);
        }
        return received.reduce((a, b) => a + b, 0);
      },
      close: () => ws.close(1000),
    };
  };

  it("a 16 kHz media_format stream is heard at 16 kHz (the callee's words their own length) and answered at 16 kHz (twice the bytes of 8 kHz)", async () => {
    const eight = await answered();
    const at8 = stream(eight.streamUrl, { encoding: 'audio/x-raw', sample_rate: '8000', bit_rate: '16' }, 16);
    const greeting8 = await at8.quiet();
    at8.close();
    await waitForCall(gw, acc.key, eight.id, ended);

    stt.say(SPOKEN);
    const heardBefore = stt.server.requests.length;
    const sixteen = await answered();
    const at16 = stream(sixteen.streamUrl, { encoding: 'audio/x-raw', sample_rate: '16000', bit_rate: '16' }, 32);
    const greeting16 = await at16.quiet();
    // The replies at the stream's rate: the same greeting in twice the bytes (whole 3,200-byte messages either way).
    assert.ok(greeting16 >= 1.8 * greeting8 && greeting16 <= 2.2 * greeting8, `greeting: ${greeting8} bytes at 8 kHz, ${greeting16} at 16 kHz`);
    assert.deepEqual(
      at16.received.filter((b) => b % 320 !== 0 || b < 3200),
      [],
    );

    // The callee speaks at 16 kHz: the gateway hears it as long as it is (misread as 8 kHz, twice as long).
    const resamplers = await loadResamplers();
    const up = resamplers.create({ from: 8000, to: 16000 });
    const samples = up.process(new Int16Array(Uint8Array.from(clip.pcm16).buffer));
    const at16k = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    up.destroy();
    at16.say(at16k);
    for (let i = 0; i < 100 && stt.server.requests.length === heardBefore; i++) await sleep(100);
    assert.ok(stt.server.requests.length > heardBefore, 'the callee was heard');
    const spoken = clip.pcm16.length / 16_000;
    const heard = wavSeconds(stt.server.requests.at(-1)!.raw);
    assert.ok(heard >= 0.6 * spoken && heard <= spoken + 1.2, `spoken ${spoken.toFixed(2)} s, heard ${heard.toFixed(2)} s`);
    at16.close();
    const c = await waitForCall(gw, acc.key, sixteen.id, ended);
    assert.ok(
      c.transcript.some((t: { role: string; text: string }) => t.role === 'callee' && t.text === SPOKEN),
      JSON.stringify(c.transcript),
    );
  });

  it('a media_format the gateway cannot take is refused by name and the call ends media_format_unsupported', async () => {
    const { id, streamUrl } = await answered();
    const alaw = stream(streamUrl, { encoding: 'audio/x-alaw', sample_rate: '8000', bit_rate: '8' }, 8);
    const code = await Promise.race([alaw.closed, sleep(5000).then(() => 0)]);
    alaw.close();
    assert.equal(code, 1003, 'closed: unsupported data');
    const c = await waitForCall(gw, acc.key, id, ended);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'media_format_unsupported']);
    assert.deepEqual(c.transcript, []);
  });

  it('a call cancelled while it rings: when Exotel answers it, its stream is closed at once and the leg ends (not left in billed dead air)', async () => {
    const res = await place(gw, acc.key, { model: 'voice-exotel', to: '+919800000062' });
    const id = res.body.id as string;
    await waitForCall(gw, acc.key, id, (c) => c.status === 'ringing');
    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${id}/cancel`, { token: acc.key })).status, 200);
    const c = await waitForCall(gw, acc.key, id, ended);
    assert.deepEqual([c.status, c.billed_seconds], ['canceled', 0]);
    // Exotel has no hang-up: the leg rings on, and the callee answers it.
    assert.equal(exotel.leg(id)?.status, 'ringing');
    for (let i = 0; i < 60 && !exotel.leg(id)?.answered; i++) await sleep(100);
    assert.ok(exotel.leg(id)?.answered, 'answered at Exotel');
    for (let i = 0; i < 30 && exotel.leg(id)?.status === 'in-progress'; i++) await sleep(100);
    await sleep(1000);
    const leg = exotel.leg(id)!;
    assert.equal(leg.status, 'completed', `the leg ${leg.status} ${leg.billedSeconds.toFixed(1)} s after its answer`);
    assert.ok(leg.billedSeconds < 1.5, `${leg.billedSeconds} s of dead air at Exotel`);
  });
});
