// Speech synthesis latency. (1) Time to first audio byte through the gateway minus direct to the
// fake OpenAI-compatible upstream, streamed `pcm` (passed through), `pcm` at 8 and 16 kHz and
// `mulaw` (resampled, and companded, in the process), interleaved rounds on loopback. (2)
// tts-local (espeak-ng's en-us, festival's en-us-slt): time to first byte and real-time factor
// (wall time ÷ audio seconds) of a 100-character sentence as 24 kHz pcm. (3) The cost of each format: a whole tts-local answer in
// each format beside the pcm one.
// The gateway runs as its own process, started as `npm start` does: in this one, the client's read
// of the first bytes would wait while the gateway converts the chunks after them (measured so
// before: +5 ms to μ-law's first byte that a remote client never saw).
// Run: npm run bench:speech [-- --rounds 200]
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startSpeechUpstream } from '../test/fakes/openai-speech-upstream.ts';
import { ADMIN, payingAccount, startGatewayProcess, stop } from './process.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '200' } } });
const rounds = Number(values.rounds);

/** ms to the first body byte, and to the end, of one POST (keep-alive agent of node:http). */
function timed(url: string, headers: Record<string, string>, body: unknown): Promise<{ first: number; total: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    let first = -1;
    let bytes = 0;
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      res.on('data', (c: Buffer) => {
        if (first < 0) first = performance.now() - t;
        bytes += c.length;
      });
      res.on('end', () => (res.statusCode === 200 ? resolve({ first, total: performance.now() - t, bytes }) : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const fmt = (n: number) => n.toFixed(2);

const fake = await startSpeechUpstream();
const runDir = mkdtempSync(join(tmpdir(), 'bench-speech-'));
const gw = await startGatewayProcess(runDir);
try {
  const { key: apiKey } = await payingAccount(gw.url, 100_000);
  const put = await fetch(`${gw.url}/admin/models/tts-fake`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      type: 'tts',
      owned_by: 'bench',
      voices: ['alloy'],
      pricing: { cents_per_1k_chars: 0.001 },
      routes: [{ provider: 'openai', base_url: `${fake.url}/v1`, upstream_model: 'tts', timeout_ms: 5000 }],
    }),
  });
  if (put.status >= 300) throw new Error(await put.text());
  const auth = { authorization: `Bearer ${apiKey}` };
  const input = 'Your call is important to us. Please stay on the line.';

  console.log(`(1) time to first audio byte, ${rounds} interleaved rounds, ms`);
  for (const [format, rate] of [
    ['pcm', 0],
    ['pcm', 8000],
    ['pcm', 16000],
    ['mulaw', 0],
  ] as const) {
    const direct: number[] = [];
    const through: number[] = [];
    const diff: number[] = [];
    for (let i = 0; i < rounds + 10; i++) {
      const d = await timed(`${fake.url}/v1/audio/speech`, {}, { model: 'tts', input, voice: 'alloy', response_format: 'pcm' });
      const g = await timed(`${gw.url}/v1/audio/speech`, auth, {
        model: 'tts-fake',
        input,
        voice: 'alloy',
        response_format: format,
        ...(rate ? { sample_rate: rate } : {}),
      });
      if (i < 10) continue; // warm-up
      direct.push(d.first);
      through.push(g.first);
      diff.push(g.first - d.first);
    }
    console.log(
      `  ${format}${rate ? `@${rate}` : ''}: direct p50 ${fmt(pct(direct, 0.5))} p90 ${fmt(pct(direct, 0.9))}; gateway p50 ${fmt(pct(through, 0.5))} p90 ${fmt(pct(through, 0.9))}; added p50 ${fmt(pct(diff, 0.5))} p90 ${fmt(pct(diff, 0.9))}`,
    );
  }

  const sentence = 'Hello, your account balance is two hundred rupees, and your next bill is due on the fifth of May.';
  for (const voice of ['en-us', 'en-us-slt']) {
    console.log(`(2) tts-local ${voice}, ${sentence.length} characters as 24 kHz pcm`);
    const first: number[] = [];
    const rtf: number[] = [];
    for (let i = 0; i < 22; i++) {
      const r = await timed(`${gw.url}/v1/audio/speech`, auth, { model: 'tts-local', input: sentence, voice, response_format: 'pcm' });
      if (i < 2) continue;
      first.push(r.first);
      rtf.push(r.total / 1000 / (r.bytes / 48_000));
    }
    console.log(`  first byte p50 ${fmt(pct(first, 0.5))} ms p90 ${fmt(pct(first, 0.9))} ms; real-time factor p50 ${pct(rtf, 0.5).toFixed(4)}`);
  }

  console.log('(3) tts-local, the whole answer by format, p50 of 10, ms (pcm 22.05 kHz passes through; 24 kHz resampled here)');
  for (const [format, rate] of [
    ['pcm', 22050],
    ['pcm', 24000],
    ['mulaw', 8000],
    ['wav', 0],
    ['mp3', 0],
    ['opus', 0],
    ['flac', 0],
    ['aac', 0],
  ] as const) {
    const totals: number[] = [];
    const firsts: number[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await timed(`${gw.url}/v1/audio/speech`, auth, {
        model: 'tts-local',
        input: sentence,
        voice: 'en-us',
        response_format: format,
        ...(rate ? { sample_rate: rate } : {}),
      });
      if (i < 2) continue;
      totals.push(r.total);
      firsts.push(r.first);
    }
    console.log(`  ${format}${rate ? `@${rate}` : ''}: first byte ${fmt(pct(firsts, 0.5))}, whole ${fmt(pct(totals, 0.5))}`);
  }
} finally {
  await stop(gw.child);
  await fake.close();
  rmSync(runDir, { recursive: true, force: true });
}
