// What the speech tests share: a funded key on a test gateway, POST /v1/audio/speech, reading a
// body chunk by chunk, SSE events, ffprobe, the energy of PCM, each format as the spec types it, and
// the engines (espeak-ng, festival) running as the gateway's children.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';

export async function fundedKey(gw: TestGateway, cents = 100): Promise<{ apiKey: string; session: string }> {
  const s = await signup(gw.url);
  const apiKey = (await createKey(gw.url, s.token)).api_key;
  const top = await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: cents } });
  assert.equal(top.status, 201, top.text);
  return { apiKey, session: s.token };
}

/** Each response format: the content type the spec gives it, the codec ffprobe reads, and the input options a raw one needs. */
export const FORMATS: Record<string, { type: string; codec: string; input?: string[] }> = {
  mp3: { type: 'audio/mpeg', codec: 'mp3' },
  wav: { type: 'audio/wav', codec: 'pcm_s16le' },
  opus: { type: 'audio/ogg', codec: 'opus' },
  flac: { type: 'audio/flac', codec: 'flac' },
  aac: { type: 'audio/aac', codec: 'aac' },
  pcm: { type: 'audio/L16', codec: 'pcm_s16le', input: ['-f', 's16le', '-ar', '24000', '-ac', '1'] },
  mulaw: { type: 'audio/basic', codec: 'pcm_mulaw', input: ['-f', 'mulaw', '-ar', '8000', '-ac', '1'] },
};

/** Call inside a suite: a test gateway and a funded key, there from its first test, destroyed after its last. */
export function fundedGateway(): { gw: TestGateway; apiKey: string; session: string } {
  const ctx = {} as { gw: TestGateway; apiKey: string; session: string };
  before(async () => {
    ctx.gw = await startTestGateway();
    Object.assign(ctx, await fundedKey(ctx.gw));
  });
  after(async () => ctx.gw?.destroy());
  return ctx;
}

export async function balance(gw: TestGateway, session: string): Promise<number> {
  return (await call(gw.url, 'GET', '/portal/wallet', { token: session })).body.balance_microcents as number;
}

export function speak(gw: TestGateway, apiKey: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  return fetch(`${gw.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

/** The body as the chunks it arrived in. */
export async function chunksOf(res: Response): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) out.push(Buffer.from(c));
  return out;
}

/** The `data:` events of an SSE body, parsed. */
export function sseEvents(text: string): Record<string, any>[] {
  return text
    .split('\n\n')
    .filter((f) => f.startsWith('data: '))
    .map((f) => JSON.parse(f.slice(6)));
}

/** ffprobe's view of audio bytes: codec, container, sample rate and duration (decoded). */
export function probe(bytes: Buffer, input: string[] = []): { codec: string; container: string; sampleRate: number; duration: number } {
  const out = execFileSync(
    'ffprobe',
    ['-v', 'error', ...input, '-i', 'pipe:0', '-show_entries', 'stream=codec_name,sample_rate:format=format_name', '-of', 'json'],
    { input: bytes },
  ).toString();
  const j = JSON.parse(out);
  const pcm = execFileSync('ffmpeg', ['-v', 'error', ...input, '-i', 'pipe:0', '-ac', '1', '-ar', '16000', '-f', 's16le', 'pipe:1'], {
    input: bytes,
    maxBuffer: 1 << 28,
  });
  return { codec: j.streams[0].codec_name, container: j.format.format_name, sampleRate: Number(j.streams[0].sample_rate), duration: pcm.length / 32000 };
}

/** Root-mean-square of s16le samples, 0..32767. */
export function rms(pcm: Buffer): number {
  let sum = 0;
  const n = pcm.length >> 1;
  for (let i = 0; i < n; i++) sum += pcm.readInt16LE(i * 2) ** 2;
  return Math.sqrt(sum / Math.max(1, n));
}

export const has = (bin: string): boolean =>
  execFileSync('sh', ['-c', `command -v ${bin} || true`])
    .toString()
    .trim() !== '';

/** This process's live (not zombie) child processes named `name` (the gateway runs in it). */
export function children(name: string): number[] {
  const pids = readdirSync(`/proc/${process.pid}/task`).flatMap((t) =>
    readFileSync(`/proc/${process.pid}/task/${t}/children`, 'utf8').split(' ').filter(Boolean),
  );
  return pids.map(Number).filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8'); // "pid (comm) state ..."
      return stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === name && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
    } catch {
      return false; // gone meanwhile
    }
  });
}
