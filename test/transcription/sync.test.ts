// POST /v1/audio/transcriptions end to end, through a real gateway: the official `openai` client in
// every response format against the offline engine (stt-local: Debian's pocketsphinx on a LibriVox
// clip), billing by the decoded seconds, the limits (25 MB before authentication, about 30 s), and
// refusals in the envelope.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect as netConnect, createServer as createNetServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { multipartForm } from './form.ts';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { wavBytes } from '../fakes/audio.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';

const LIBRIVOX = '/usr/share/pocketsphinx/test/data/librivox';
const CLIP = join(LIBRIVOX, 'sense_and_sensibility_01_austen_64kb-0880.wav'); // "he was not an ill disposed young man", 2.99 s
const missing = ['ffmpeg', 'pocketsphinx_continuous'].filter(
  (b) =>
    !execFileSync('sh', ['-c', `command -v ${b} || true`])
      .toString()
      .trim(),
);
const skip =
  missing.length > 0 || !existsSync(CLIP) ? `needs ${missing.join(', ') || 'pocketsphinx-testdata'} (scripts/install-debian-packages.sh --test)` : false;

describe('POST /v1/audio/transcriptions', { skip }, () => {
  let gw: TestGateway;
  let apiKey: string;
  let userId: number;
  let client: OpenAI;
  const walletMicrocents = async () => (await call(gw.url, 'GET', '/portal/wallet', { token: session })).body.balance_microcents as number;
  let session: string;

  before(async () => {
    gw = await startTestGateway();
    const s = await signup(gw.url);
    session = s.token;
    userId = s.id;
    apiKey = (await createKey(gw.url, s.token)).api_key;
    const top = await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: userId, amount_cents: 100 } });
    assert.equal(top.status, 201, top.text);
    client = new OpenAI({ apiKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  after(async () => gw?.destroy());

  it('the official client transcribes a clip with stt-local in every format, billed by its seconds', async () => {
    const before = await walletMicrocents();
    const file = () => toFile(readFileSync(CLIP), 'clip.wav');
    const json = await client.audio.transcriptions.create({ model: 'stt-local', file: await file() });
    const words = json.text.toLowerCase().split(/\s+/);
    for (const w of ['was', 'not', 'young', 'man']) assert.ok(words.includes(w), `"${json.text}" has "${w}"`);
    const spec = json as unknown as {
      language: string;
      duration: number;
      segments: { id: number; start: number; end: number; text: string }[];
      usage: { type: string; seconds: number };
    };
    assert.equal(spec.language, 'en-US');
    assert.ok(Math.abs(spec.duration - 2.99) < 0.05, `duration ${spec.duration}`);
    assert.equal(spec.segments[0]!.id, 0);
    assert.ok(spec.segments.every((s) => s.end > s.start && s.end <= spec.duration + 0.001));
    assert.deepEqual(spec.usage, { type: 'duration', seconds: 3 });

    const verbose = await client.audio.transcriptions.create({
      model: 'stt-local',
      file: await file(),
      response_format: 'verbose_json',
      timestamp_granularities: ['word', 'segment'],
    });
    assert.equal(verbose.language, 'english');
    assert.ok(verbose.words!.length >= 5 && verbose.words!.every((w) => w.end >= w.start));
    assert.ok(verbose.segments!.length >= 1);

    const text = await client.audio.transcriptions.create({ model: 'stt-local', file: await file(), response_format: 'text' });
    assert.equal(typeof text, 'string');
    assert.ok((text as unknown as string).includes('young'));
    const srt = (await client.audio.transcriptions.create({ model: 'stt-local', file: await file(), response_format: 'srt' })) as unknown as string;
    assert.match(srt, /^1\n00:00:\d\d,\d{3} --> 00:00:\d\d,\d{3}\n/);
    const vtt = (await client.audio.transcriptions.create({ model: 'stt-local', file: await file(), response_format: 'vtt' })) as unknown as string;
    assert.match(vtt, /^WEBVTT\n\n00:00:\d\d\.\d{3} --> /);

    // Five calls of 3 billed seconds at 0.1 cent a minute: 5 × 3/60 × 0.1 cent = 0.025 cent = 25,000 µ¢.
    assert.equal(before - (await walletMicrocents()), 25_000);
  });

  it("a prompt naming the clip's rare words (OpenAI's `prompt`) or key terms helps stt-local hear them", async () => {
    const file = async () => toFile(readFileSync(CLIP), 'clip.wav');
    const plain = await client.audio.transcriptions.create({ model: 'stt-local', file: await file() });
    assert.doesNotMatch(plain.text, /ill disposed/, `without the prompt: "${plain.text}"`);
    const prompted = await client.audio.transcriptions.create({ model: 'stt-local', file: await file(), prompt: 'ill disposed' });
    assert.match(prompted.text, /\bill disposed young man\b/, `with the prompt: "${prompted.text}"`);
    const form = multipartForm(
      { model: 'stt-local', 'key_terms[]': 'ill disposed', response_format: 'verbose_json', 'timestamp_granularities[]': 'word' },
      readFileSync(CLIP),
    );
    const termed = await call(gw.url, 'POST', '/v1/audio/transcriptions', { token: apiKey, ...form });
    assert.equal(termed.status, 200, termed.text);
    assert.match(termed.body.text, /ill disposed/);
    const words = termed.body.words as { word: string; start: number; end: number }[];
    assert.ok(
      words.every((w, i) => w.end >= w.start && (i === 0 || w.start >= words[i - 1]!.start)),
      JSON.stringify(words),
    );
  });

  it('decodes the upload once: one ffmpeg per stt-local call, and the seconds billed are those the engine heard', async () => {
    const before = await walletMicrocents();
    const { result: json, ffmpegRuns } = await countingFfmpeg(
      async () =>
        (await client.audio.transcriptions.create({ model: 'stt-local', file: await toFile(readFileSync(CLIP), 'clip.wav') })) as unknown as {
          text: string;
          duration: number;
          usage: { seconds: number };
        },
    );
    assert.ok(json.text.includes('young'), json.text);
    assert.ok(Math.abs(json.duration - 2.99) < 0.05, `duration ${json.duration}`);
    assert.equal(json.usage.seconds, 3);
    assert.equal(before - (await walletMicrocents()), 5_000, '3 s at 0.1 cent a minute');
    assert.equal(ffmpegRuns.length, 1, `ffmpeg ran ${ffmpegRuns.length} times:\n${ffmpegRuns.join('\n')}`);
  });

  it('a model routed to an upstream first: the upstream gets the file; when it fails, the engine behind it takes the PCM already decoded', async () => {
    const upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
    try {
      const put = await call(gw.url, 'PUT', '/admin/models/stt-fallback', {
        token: ADMIN_TOKEN,
        body: {
          type: 'stt',
          owned_by: 'acme',
          languages: ['en-US'],
          modes: ['transcribe'],
          pricing: { cents_per_minute: 0.1 },
          routes: [
            { provider: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-up', upstream_model: 'whisper-1' },
            { provider: 'local', upstream_model: 'pocketsphinx-en-us' },
          ],
        },
      });
      assert.ok(put.status < 300, put.text);
      const transcribe = async () =>
        (await client.audio.transcriptions.create({ model: 'stt-fallback', file: await toFile(readFileSync(CLIP), 'clip.wav') })) as unknown as {
          text: string;
          usage: { seconds: number };
        };
      const before = await walletMicrocents();
      const byUpstream = await countingFfmpeg(transcribe);
      assert.equal(upstream.calls('/v1/audio/transcriptions').length, 1);
      assert.ok(upstream.requests.at(-1)!.raw.includes(readFileSync(CLIP)), 'the upload as it came, not PCM');
      assert.equal(byUpstream.result.usage.seconds, 3);
      assert.equal(byUpstream.ffmpegRuns.length, 1, 'decoded once, for the duration');

      upstream.next({ status: 500 });
      const byEngine = await countingFfmpeg(transcribe);
      assert.equal(upstream.calls('/v1/audio/transcriptions').length, 2);
      assert.ok(byEngine.result.text.includes('young'), byEngine.result.text);
      assert.equal(byEngine.result.usage.seconds, 3);
      assert.equal(byEngine.ffmpegRuns.length, 1, 'the engine took the PCM: no second decode');
      assert.equal(before - (await walletMicrocents()), 10_000, 'two calls of 3 s at 0.1 cent a minute');
    } finally {
      await upstream.close();
    }
  });

  it("takes OpenAI's ISO-639-1 `language: 'en'` as the model's first English region; a refusal names the field the client sent", async () => {
    // stt-local offers en-US, en-IN and en-GB: a bare `en` (OpenAI's own example) is en-US, the first.
    const en = (await client.audio.transcriptions.create({
      model: 'stt-local',
      file: await toFile(readFileSync(CLIP), 'a.wav'),
      language: 'en',
    })) as unknown as { text: string; language: string };
    assert.ok(en.text.includes('young'), en.text);
    assert.equal(en.language, 'en-US');
    const byCode = await call(gw.url, 'POST', '/v1/audio/transcriptions', {
      token: apiKey,
      ...multipartForm({ model: 'stt-local', language_code: 'en' }, readFileSync(CLIP)),
    });
    assert.equal(byCode.status, 200, byCode.text);
    assert.equal(byCode.body.language, 'en-US');
    const job = await call(gw.url, 'POST', '/v1/audio/transcriptions/jobs', {
      token: apiKey,
      ...multipartForm({ model: 'stt-local', language: 'en', diarize: 'false' }, readFileSync(CLIP)),
    });
    assert.equal(job.status, 202, job.text);
    const hindi = await client.audio.transcriptions
      .create({ model: 'stt-local', file: await toFile(readFileSync(CLIP), 'a.wav'), language: 'hi' })
      .catch((e) => e);
    assert.equal(hindi.code, 'language_not_supported');
    assert.equal(hindi.param, 'language', 'the field the client sent');
    const hindiByCode = await call(gw.url, 'POST', '/v1/audio/transcriptions', {
      token: apiKey,
      ...multipartForm({ model: 'stt-local', language_code: 'hi-IN' }, readFileSync(CLIP)),
    });
    assert.equal(hindiByCode.body.error.param, 'language_code');
    const jobHindi = await call(gw.url, 'POST', '/v1/audio/transcriptions/jobs', {
      token: apiKey,
      ...multipartForm({ model: 'stt-local', language: 'hi' }, readFileSync(CLIP)),
    });
    assert.equal(jobHindi.status, 400, jobHindi.text);
    assert.equal(jobHindi.body.error.param, 'language');
    let done;
    for (let i = 0; i < 300 && done?.status !== 'completed' && done?.status !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      done = (await call(gw.url, 'GET', `/v1/audio/transcriptions/jobs/${job.body.id}`, { token: apiKey })).body;
    }
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.equal(done.language, 'en-US');
  });

  it('refuses what it cannot decode, what is too long, and what the model does not offer; none of it is charged', async () => {
    const before = await walletMicrocents();
    const notAudio = await client.audio.transcriptions
      .create({ model: 'stt-local', file: await toFile(Buffer.from('this is not audio at all'.repeat(50)), 'speech.mp3') })
      .catch((e) => e);
    assert.equal(notAudio.status, 400);
    assert.equal(notAudio.code, 'invalid_audio');
    const long = await client.audio.transcriptions.create({ model: 'stt-local', file: await toFile(wavBytes(31), 'long.wav') }).catch((e) => e);
    assert.equal(long.status, 400);
    assert.equal(long.code, 'audio_too_long');
    assert.match(long.message, /\/v1\/audio\/transcriptions\/jobs/);
    const hindi = await client.audio.transcriptions
      .create({ model: 'stt-local', file: await toFile(readFileSync(CLIP), 'a.wav'), language: 'hi' })
      .catch((e) => e);
    assert.equal(hindi.status, 400);
    assert.equal(hindi.code, 'language_not_supported');
    const mode = await call(gw.url, 'POST', '/v1/audio/transcriptions', {
      token: apiKey,
      ...multipartForm({ model: 'stt-local', mode: 'translate' }, readFileSync(CLIP)),
    });
    assert.equal(mode.status, 400, mode.text);
    assert.equal(mode.body.error.code, 'mode_not_supported');
    const unknown = await call(gw.url, 'POST', '/v1/audio/transcriptions', {
      token: apiKey,
      ...multipartForm({ model: 'stt-local', colour: 'blue' }, readFileSync(CLIP)),
    });
    assert.equal(unknown.body.error.param, 'colour');
    const noFile = await call(gw.url, 'POST', '/v1/audio/transcriptions', { token: apiKey, ...multipartForm({ model: 'stt-local' }, null) });
    assert.equal(noFile.status, 400);
    assert.equal(noFile.body.error.param, 'file');
    assert.equal(await walletMicrocents(), before);
  });

  it('answers 413 with a plain page before authentication when Content-Length says over 25 MB, and closes', async () => {
    const res = await rawPost(gw.url, { 'content-type': 'multipart/form-data; boundary=x', 'content-length': String(26 * 1024 * 1024) }, Buffer.alloc(0));
    assert.equal(res.status, 413);
    assert.match(res.headers['content-type'] ?? '', /^text\/html/);
    assert.equal(res.headers.connection, 'close');
    assert.match(res.body, /413 Request Entity Too Large/);
    assert.ok(res.headers['x-request-id']);
  });

  it("the official client's 27 MB upload (toFile, a known length) gets the 413 as APIError, once: the rest of the body is read and dropped, not reset", async () => {
    let requests = 0;
    const count = (req: { url?: string }) => void (req.url === '/v1/audio/transcriptions' && requests++);
    gw.app.server.on('request', count);
    // Between client and gateway, a network where the answer takes 50 ms to arrive and a reset does
    // not wait (it overtakes data the client has not read yet, as a reset does to a receive queue).
    const net = await slowAnswers(Number(new URL(gw.url).port), 50);
    try {
      const retrying = new OpenAI({ apiKey, baseURL: `http://127.0.0.1:${net.port}/v1`, maxRetries: 2 }); // the client's default: a connection error is retried
      const err = await retrying.audio.transcriptions.create({ model: 'stt-local', file: await toFile(Buffer.alloc(27 * 1024 * 1024, 1), 'big.wav') }).then(
        () => assert.fail('not refused'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof OpenAI.APIError, String(err));
      assert.ok(!(err instanceof OpenAI.APIConnectionError), `a connection error: ${String(err)}`);
      assert.equal(err.status, 413);
      assert.equal(requests, 1, 'no retry');
      assert.equal(net.connections(), 1);
    } finally {
      gw.app.server.off('request', count);
      net.server.close();
    }
  });

  it('a client that never stops sending past the limit is cut: after at most 32 MiB more of its body, or 5 s', async () => {
    const [fast, slow] = await Promise.all([endlessUpload(gw.url, apiKey), endlessUpload(gw.url, apiKey, true)]);
    for (const cut of [fast, slow]) assert.equal(cut.status, 413);
    // What the kernel's buffers took beside what the gateway read: a few MB on loopback.
    assert.ok(fast.sentBytes > 32 * 1024 * 1024 && fast.sentBytes < 48 * 1024 * 1024, `${fast.sentBytes} bytes sent before the cut`);
    assert.ok(fast.ms < 4500, `the byte bound first: cut after ${fast.ms} ms`);
    assert.ok(slow.ms >= 4900 && slow.ms < 7000, `the time bound: cut after ${slow.ms} ms (${slow.sentBytes} bytes)`);
  });

  it('cuts a chunked upload as soon as it passes 25 MB: 413, plain page, connection closed', async () => {
    const size = 100 * 1024 * 1024;
    const res = await chunkedUpload(gw.url, apiKey, size);
    assert.equal(res.status, 413);
    assert.match(res.body, /413 Request Entity Too Large/);
    assert.equal(res.headers.connection, 'close');
    assert.ok(res.sentBytes < 40 * 1024 * 1024, `stopped reading soon after 25 MB (${res.sentBytes} of ${size} bytes sent)`);
  });
});

function rawPost(
  base: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<{ status: number; headers: Record<string, string | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/v1/audio/transcriptions`, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers as Record<string, string | undefined>, body: Buffer.concat(chunks).toString() }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Streams a multipart upload of `size` bytes of file without a Content-Length, as fast as it is taken. */
function chunkedUpload(
  base: string,
  apiKey: string,
  size: number,
): Promise<{ status: number; headers: Record<string, string | undefined>; body: string; sentBytes: number }> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    const boundary = 'bigboundary';
    const req = request(
      `${base}/v1/audio/transcriptions`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers as Record<string, string | undefined>,
            body: Buffer.concat(chunks).toString(),
            sentBytes: sent,
          }),
        );
      },
    );
    req.on('error', () => {}); // the server closes the connection while we still send
    req.write(
      `--${boundary}\r\ncontent-disposition: form-data; name="model"\r\n\r\nstt-local\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.wav"\r\ncontent-type: audio/wav\r\n\r\n`,
    );
    const chunk = Buffer.alloc(256 * 1024, 7);
    const pump = () => {
      while (sent < size) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end(`\r\n--${boundary}--\r\n`);
    };
    pump();
    setTimeout(() => reject(new Error('no answer')), 20_000).unref();
  });
}

/**
 * A TCP hop to `port` whose server-to-client bytes (and end) arrive `delayMs` late, while a reset
 * from the server reaches the client at once: what happens to an answer still in a client's receive
 * queue when a reset lands. Counts the connections it carried.
 */
async function slowAnswers(port: number, delayMs: number): Promise<{ port: number; server: Server; connections(): number }> {
  let connections = 0;
  const server = createNetServer((client) => {
    connections++;
    const up = netConnect(port, '127.0.0.1');
    client.on('error', () => up.destroy());
    up.on('error', () => client.resetAndDestroy());
    client.pipe(up);
    up.on('data', (chunk: Buffer) => void setTimeout(() => client.writable && client.write(chunk), delayMs));
    up.on('end', () => void setTimeout(() => client.end(), delayMs));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, server, connections: () => connections };
}

/**
 * A multipart upload declaring 1 GiB and sending it as fast as it is taken, on a socket that keeps
 * writing after the server's FIN (half-open), until the server cuts it. `trickle`: 64 KiB every
 * 100 ms instead, to meet the time bound rather than the byte bound.
 */
function endlessUpload(base: string, apiKey: string, trickle = false): Promise<{ status: number; sentBytes: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const { hostname, port } = new URL(base);
    const socket = netConnect({ host: hostname, port: Number(port), allowHalfOpen: true });
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () =>
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0), sentBytes: socket.bytesWritten, ms: Date.now() - started }),
    );
    socket.write(
      `POST /v1/audio/transcriptions HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${apiKey}\r\ncontent-type: multipart/form-data; boundary=x\r\ncontent-length: ${1024 ** 3}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(trickle ? 64 * 1024 : 256 * 1024, 7);
    const pump = () => {
      while (!socket.destroyed) {
        if (trickle) return void (socket.write(chunk), setTimeout(pump, 100));
        if (!socket.write(chunk)) return void socket.once('drain', pump);
      }
    };
    pump();
    setTimeout(() => reject(new Error('never cut')), 20_000).unref();
  });
}

/** Runs `fn` with a stand-in for ffmpeg first on PATH that notes each run, then runs the real one. */
async function countingFfmpeg<T>(fn: () => Promise<T>): Promise<{ result: T; ffmpegRuns: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ffmpeg-'));
  const runs = join(dir, 'runs');
  writeFileSync(runs, '');
  writeFileSync(join(dir, 'ffmpeg'), `#!/bin/sh\necho "$*" >> '${runs}'\nexec ${execFileSync('sh', ['-c', 'command -v ffmpeg']).toString().trim()} "$@"\n`);
  chmodSync(join(dir, 'ffmpeg'), 0o755);
  const path = process.env.PATH;
  process.env.PATH = `${dir}:${path}`;
  try {
    const result = await fn();
    return { result, ffmpegRuns: readFileSync(runs, 'utf8').split('\n').filter(Boolean) };
  } finally {
    process.env.PATH = path;
    rmSync(dir, { recursive: true, force: true });
  }
}
