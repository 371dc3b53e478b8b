// Voice calls at concurrency (issue 31 §6, the scale part): N calls at once through the gateway
// (separate process, the esbuild bundle as `npm start` runs it, embedded store) on a `twilio` route
// whose Twilio is this process: its REST API answers, its signed status callbacks say ringing and
// answered, and a Media Streams socket per call sends 20 ms of silence every 20 ms and records when
// each of the agent's media frames arrives. Every call's agent speaks the same long first message
// (pre-rendered once by tts-local, then served from the cache), paced by the gateway at 20 ms.
//   gaps     — between consecutive agent frames of a call, as received: p50 / p99 / max
//   underruns — frames that arrived after the carrier needed them: playing from the first frame's
//              arrival at 20 ms a frame, frame i is due at first + 20·i (the gateway sends 40 ms ahead)
//   CPU      — gateway process CPU / (calls × seconds of agent audio played)
//
//   npm run bench:voice -- [--calls 100] [--seconds 15]
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { twilioSignature } from '../src/providers/twilio/voice.ts';
import { cpuSeconds, json, payingAccount, ROOT, startGatewayProcess } from './process.ts';

const args = process.argv.slice(2);
const arg = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const CALLS = Number(arg('--calls') ?? 100);
const SECONDS = Number(arg('--seconds') ?? 15);
const RUN_DIR = mkdtempSync(join(tmpdir(), 'bench-voice-'));
const SID = 'ACbench';
const TOKEN = 'bench-twilio-token';
const SILENCE = Buffer.alloc(160, 0xff).toString('base64');
// About SECONDS of speech at espeak's 175 words a minute.
const MESSAGE = Array.from({ length: Math.ceil((SECONDS * 175) / 60 / 10) }, () => 'This is a long message from the agent to measure pacing.').join(' ');

interface Leg {
  arrivals: number[];
  ws: WebSocket | null;
}
const legs = new Map<string, Leg>();
// The callee's side: 20 ms of silence every 20 ms on every open stream, from one timer (the
// bench's own jitter is kept out of what it measures as far as one process allows).
const open_ = new Set<WebSocket>();
const SILENCE_FRAME = JSON.stringify({ event: 'media', streamSid: 'MZbench', media: { payload: SILENCE } });
setInterval(() => {
  for (const ws of open_) ws.send(SILENCE_FRAME);
}, 20).unref();

// ---------- the fake Twilio ----------
const twilio = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c));
  req.on('end', () => {
    const form = new URLSearchParams(body);
    res.writeHead(req.url?.endsWith('/Calls.json') ? 201 : 200, { 'content-type': 'application/json' });
    if (!req.url?.endsWith('/Calls.json')) return res.end('{}'); // a hang-up
    const sid = `CA${Math.random().toString(16).slice(2).padEnd(32, '0')}`;
    res.end(JSON.stringify({ sid, status: 'queued' }));
    const twiml = form.get('Twiml')!;
    const url = /<Stream url="([^"]+)"/.exec(twiml)![1]!;
    const parameters = Object.fromEntries([...twiml.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [m[1]!, m[2]!]));
    const callback = form.get('StatusCallback')!;
    const post = (status: string) => {
      const params: [string, string][] = [['CallSid', sid], ['CallStatus', status]];
      return fetch(callback, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, callback, params) }, body: new URLSearchParams(params).toString() });
    };
    void post('ringing').then(() => post('in-progress')).then(() => open(url, parameters));
  });
});

function open(url: string, parameters: Record<string, string>): void {
  const leg: Leg = { arrivals: [], ws: null };
  legs.set(parameters.call_id!, leg);
  const ws = new WebSocket(url, { perMessageDeflate: false });
  leg.ws = ws;
  ws.on('open', () => {
    ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    ws.send(JSON.stringify({ event: 'start', streamSid: 'MZbench', start: { streamSid: 'MZbench', customParameters: parameters, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } } }));
    open_.add(ws);
  });
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as { event: string; mark?: { name: string } };
    if (m.event === 'media') leg.arrivals.push(performance.now());
    else if (m.event === 'mark') ws.send(JSON.stringify({ event: 'mark', streamSid: 'MZbench', mark: m.mark }));
  });
  ws.on('close', () => open_.delete(ws));
  ws.on('error', () => undefined);
}

const pct = (xs: number[], p: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]! : NaN);

async function main(): Promise<void> {
  await new Promise<void>((r) => twilio.listen(0, '127.0.0.1', r));
  const twilioUrl = `http://127.0.0.1:${(twilio.address() as AddressInfo).port}`;
  const defaults = JSON.parse(readFileSync(join(ROOT, 'config', 'default.json'), 'utf8')) as { models: unknown[] };
  const config = join(RUN_DIR, 'config.json');
  const model = {
    id: 'voice-bench', type: 'voice', owned_by: 'bench', stt_model: 'stt-local', tts_model: 'tts-local', intent_model: 'intent-demo', price_per_minute_cents: 1,
    countries: ['IN'], languages: ['en-IN'], voices: ['en-us'], pricing: {},
    routes: [{ provider: 'twilio', base_url: twilioUrl, account_sid: SID, api_key: TOKEN, from: '+14155550100' }],
  };
  writeFileSync(config, JSON.stringify({ voice: { maxConcurrentCalls: CALLS + 10 }, models: [...defaults.models, model] }));
  const gw = await startGatewayProcess(RUN_DIR, { env: { CONFIG_FILE: config } });
  try {
    const acc = await payingAccount(gw.url, 1_000_000);
    const body = { model: 'voice-bench', to: '+919800000001', max_duration_seconds: SECONDS + 60, first_message: { text: MESSAGE } };
    // One call first: the message is rendered once and cached; the measured calls reuse it.
    const warm = await json('POST', `${gw.url}/v1/voice/call`, acc.key, body);
    await waitPlayed([warm.id as string]);
    await json('POST', `${gw.url}/v1/voice/calls/${warm.id}/hangup`, acc.key, {});
    legs.clear();
    const cpu0 = cpuSeconds(gw.child.pid!);
    const ids = (await Promise.all(Array.from({ length: CALLS }, () => json('POST', `${gw.url}/v1/voice/call`, acc.key, body)))).map((c) => c.id as string);
    await waitPlayed(ids);
    const cpu = cpuSeconds(gw.child.pid!) - cpu0;
    const gaps: number[] = [];
    let audioS = 0;
    let underruns = 0;
    for (const id of ids) {
      const a = legs.get(id)?.arrivals ?? [];
      for (let i = 1; i < a.length; i++) gaps.push(a[i]! - a[i - 1]!);
      for (let i = 0; i < a.length; i++) if (a[i]! > a[0]! + 20 * i) underruns += 1;
      audioS += (a.length * 20) / 1000;
    }
    await Promise.all(ids.map((id) => json('POST', `${gw.url}/v1/voice/calls/${id}/hangup`, acc.key, {}).catch(() => undefined)));
    console.log(`voice: ${CALLS} calls at once, ${audioS.toFixed(0)} s of agent audio received`);
    console.log(`  inter-frame gap ms: p50 ${pct(gaps, 50).toFixed(1)}, p99 ${pct(gaps, 99).toFixed(1)}, max ${Math.max(...gaps).toFixed(1)}; underruns ${underruns} of ${gaps.length + ids.length} frames`);
    console.log(`  gateway CPU: ${((cpu / audioS) * 100).toFixed(2)}% of a core per call-second (${cpu.toFixed(1)} s over the run)`);
    console.log(pct(gaps, 99) <= 40 && underruns === 0 ? 'PASS' : 'FAIL', '(p99 gap <= 40 ms, no underruns)');
  } finally {
    gw.child.kill('SIGTERM');
    twilio.close();
    for (const leg of legs.values()) leg.ws?.terminate();
    rmSync(RUN_DIR, { recursive: true, force: true });
  }
}

/** Until each call's agent audio has stopped arriving for a second (its first message played). */
async function waitPlayed(ids: string[]): Promise<void> {
  const deadline = Date.now() + (SECONDS + 120) * 1000;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 500));
    const now = performance.now();
    if (ids.every((id) => { const a = legs.get(id)?.arrivals ?? []; return a.length > 0 && now - a.at(-1)! > 1000; })) return;
  }
  throw new Error('the agents did not finish speaking in time');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
