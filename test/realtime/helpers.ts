// A realtime client as an integrator would write it (`ws`, OpenAI's events), LibriVox audio in
// every encoding, and a gateway with a funded key.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { g711Encode } from '../../src/speech/g711.ts';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';

export const LIBRIVOX = '/usr/share/pocketsphinx/test/data/librivox';
export const CLIP = join(LIBRIVOX, 'sense_and_sensibility_01_austen_64kb-0880.wav'); // "he was not an ill disposed young man", 2.99 s
const missing = ['ffmpeg', 'pocketsphinx_batch'].filter(
  (b) =>
    !execFileSync('sh', ['-c', `command -v ${b} || true`])
      .toString()
      .trim(),
);
export const skipSpeech =
  missing.length > 0 || !existsSync(CLIP) ? `needs ${missing.join(', ') || 'pocketsphinx-testdata'} (scripts/install-debian-packages.sh --test)` : false;

/** The samples of a 16-bit mono WAV. */
export function wavSamples(path: string): Int16Array {
  const buf = readFileSync(path);
  let at = 12;
  while (at + 8 <= buf.length) {
    const id = buf.toString('ascii', at, at + 4);
    const size = buf.readUInt32LE(at + 4);
    if (id === 'data') {
      const data = buf.subarray(at + 8, at + 8 + size);
      return new Int16Array(Uint8Array.from(data).buffer);
    }
    at += 8 + size + (size % 2);
  }
  throw new Error(`no data chunk in ${path}`);
}

/** Silence, the clip, silence: at 16 kHz. */
export function speech16k(leadS = 1, tailS = 1.5, clip = CLIP): Int16Array {
  const s = wavSamples(clip);
  const out = new Int16Array(Math.round((leadS + tailS) * 16000) + s.length);
  out.set(s, Math.round(leadS * 16000));
  return out;
}

/** 16 kHz → 8 kHz by averaging pairs (enough for a test's telephone audio). */
export function to8k(s: Int16Array): Int16Array {
  const out = new Int16Array(Math.floor(s.length / 2));
  for (let i = 0; i < out.length; i++) out[i] = (s[2 * i]! + s[2 * i + 1]!) >> 1;
  return out;
}

export function encode(samples: Int16Array, encoding: 'pcm_s16le' | 'mulaw' | 'alaw' | 'linear32'): Buffer {
  if (encoding === 'mulaw' || encoding === 'alaw') return Buffer.from(g711Encode(encoding, samples));
  if (encoding === 'pcm_s16le') return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const out = Buffer.alloc(samples.length * 4);
  for (let i = 0; i < samples.length; i++) out.writeInt32LE(samples[i]! * 65536, i * 4);
  return out;
}

export interface Frame {
  type: string;
  [k: string]: any;
}

/** A connected client: every frame it got, in order, and ways to wait for more. */
export class Client {
  readonly frames: Frame[] = [];
  readonly upgradeHeaders: Record<string, string | string[] | undefined>;
  closeCode: number | null = null;
  private waiters: Array<() => void> = [];
  readonly closed: Promise<number>;

  constructor(
    readonly ws: WebSocket,
    headers: Record<string, string | string[] | undefined>,
  ) {
    this.upgradeHeaders = headers;
    ws.on('message', (data, isBinary) => {
      if (!isBinary) this.frames.push(JSON.parse(data.toString()) as Frame);
      this.wake();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code) => {
        this.closeCode = code;
        this.wake();
        resolve(code);
      }),
    );
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Waits until `pred` holds over the frames so far (or fails after `ms`). */
  async until(pred: (frames: Frame[]) => boolean, ms = 20_000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + ms;
    while (!pred(this.frames)) {
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}; frames: ${this.frames.map((f) => f.type).join(', ')}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200).unref();
      });
    }
  }

  /** The first frame of `type` (waiting for it). */
  async next(type: string, ms?: number): Promise<Frame> {
    await this.until((f) => f.some((x) => x.type === type), ms, type);
    return this.frames.find((x) => x.type === type)!;
  }

  of(type: string): Frame[] {
    return this.frames.filter((f) => f.type === type);
  }

  send(event: object): void {
    this.ws.send(JSON.stringify(event));
  }

  /** Sends audio as OpenAI's append events (base64), `chunkMs` at a time, as fast as allowed. */
  append(bytes: Buffer, bytesPerSecond: number, chunkMs = 100): void {
    const step = Math.round((bytesPerSecond * chunkMs) / 1000);
    for (let at = 0; at < bytes.length; at += step) this.send({ type: 'input_audio_buffer.append', audio: bytes.subarray(at, at + step).toString('base64') });
  }
}

/** `path`: the spec's socket, or `/v1/realtime` (OpenAI's URL for it). */
export async function connect(
  base: string,
  query: Record<string, string>,
  headers: Record<string, string> = {},
  path = '/v1/audio/transcriptions/stream',
): Promise<Client> {
  const url = `${base.replace(/^http/, 'ws')}${path}?${new URLSearchParams(query)}`;
  const ws = new WebSocket(url, { headers });
  return new Promise((resolve, reject) => {
    ws.once('upgrade', (res) => resolve(new Client(ws, res.headers)));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () =>
        reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode, headers: res.headers, body: JSON.parse(body || 'null') })),
      );
    });
    ws.once('error', reject);
  });
}

/** What connect's refusal carried. */
export async function refusal(p: Promise<Client>): Promise<{ status: number; headers: Record<string, string>; body: any }> {
  const err = await p.then(
    (c) => {
      c.ws.close();
      assert.fail('the upgrade was accepted');
    },
    (e: unknown) => e as { status: number; headers: Record<string, string>; body: any },
  );
  return err;
}

export interface Funded {
  gw: TestGateway;
  apiKey: string;
  keyId: number;
  session: string;
  userId: number;
  balance(): Promise<number>;
}

export async function fundedGateway(overrides: Record<string, unknown> = {}, cents = 100, opts: { dir?: string } = {}): Promise<Funded> {
  const gw = await startTestGateway(overrides, opts);
  const s = await signup(gw.url);
  const key = await createKey(gw.url, s.token);
  if (cents > 0) {
    const top = await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: cents } });
    assert.equal(top.status, 201, top.text);
  }
  return {
    gw,
    apiKey: key.api_key,
    keyId: key.id,
    session: s.token,
    userId: s.id,
    balance: async () => (await call(gw.url, 'GET', '/portal/wallet', { token: s.token })).body.balance_microcents as number,
  };
}

/** Waits for the session's actor to close, and answers its stored view. */
export async function closedSession(gw: TestGateway, sessionId: string, ms = 15_000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const view = await gw.runtime.get('realtime-session', sessionId).catch(() => null);
    if (view && view.status === 'done') return view;
    if (Date.now() > deadline) assert.fail(`session ${sessionId} not closed: ${JSON.stringify(view?.value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** µ¢ of `seconds` of audio at stt-local's 0.1 cent a minute. */
export const localPrice = (seconds: number): number => Math.ceil((seconds * 0.1 * 1_000_000) / 60 - 1e-9);
