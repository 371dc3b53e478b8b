// Realtime transcription at concurrency (issue 18 §5), against a floor measured in the same run:
//   gateway — WS /v1/audio/transcriptions/stream of our gateway (separate process, embedded store,
//             the esbuild bundle as `npm start` runs it): key, per-key cap, one actor per socket
//             checkpointed every second, ticks through the Meter, server VAD, utterance mode through
//             the router to a fake sync upstream;
//   floor   — bench/realtime-floor.ts: a bare `ws` relay doing only the μ-law decode, the same VAD,
//             and the same upstream call per utterance.
// Every session streams 8 kHz μ-law at real time in 20 ms binary frames: recorded speech
// (codec2-examples, /usr/share/codec2/raw) with 1.2 s of silence between clips, so the VAD commits
// each clip. Levels ramp (--levels); each level opens N sessions, streams --seconds, closes them.
//   held    — no frame sent later than 100 ms after its time, and no probe (a
//             `transcription_session.update` every second per session, answered in order after the
//             frames before it) answered later than 100 ms: the server handles every frame in time.
//   CPU     — server process CPU / (sessions × seconds streamed); RSS — (RSS at the end of
//             streaming − RSS before the level) / sessions.
//   latency — the last frame of a clip sent → that clip's `completed`; gateway minus floor, p50/p99.
//
//   npm run bench:realtime -- [--levels 50,100,200,300,400] [--seconds 20] [--only gateway|floor] [--profile DIR]
//   npm run bench:realtime -- --sessions 300   the target alone (gateway and floor, 20 s), ending in a
//                                              `PASS`/`FAIL` line for the gateway at that level
// --profile DIR writes the gateway's CPU profile (node --cpu-prof) under DIR/gateway at its exit.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { g711Encode } from '../src/speech/g711.ts';
import { cpuSeconds, gatewayUrl, json, rssMiB, startArgs, startLogged } from './process.ts';

const args = process.argv.slice(2);
const arg = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const TARGET = arg('--sessions') !== undefined ? Number(arg('--sessions')) : null;
const LEVELS = (TARGET !== null ? String(TARGET) : (arg('--levels') ?? '50,100,200,300,400')).split(',').map(Number);
if (LEVELS.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--sessions / --levels: positive integers');
const SECONDS = Number(arg('--seconds') ?? 20);
const ONLY = arg('--only');
const PROFILE_DIR = arg('--profile');
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ADMIN = 'bench-admin-token-0123456789';
const RUN_DIR = mkdtempSync(join(tmpdir(), 'bench-realtime-'));
const FRAME_MS = 20;
const FRAME_BYTES = 160; // 20 ms of 8 kHz μ-law
const GAP_S = 1.2;
const LATE_MS = 100;
const CLIPS = ['hts1a', 'hts2a', 'forig', 'morig', 'cross', 'big_dog'].map((n) => `/usr/share/codec2/raw/${n}.raw`);

// ---------- the audio: clips and gaps, and where each clip's last frame falls ----------
function program(): { bytes: Buffer; clipEnds: number[] } {
  const parts: Buffer[] = [];
  const clipEnds: number[] = []; // frame index of each clip's last speech frame
  let frames = 0;
  for (const path of CLIPS.filter(existsSync)) {
    const raw = readFileSync(path);
    const pcm = new Int16Array(Uint8Array.from(raw.subarray(0, raw.length - (raw.length % 2))).buffer);
    const padded = Math.ceil(pcm.length / FRAME_BYTES) * FRAME_BYTES;
    const clip = new Int16Array(padded);
    clip.set(pcm);
    parts.push(Buffer.from(g711Encode('mulaw', clip)));
    frames += padded / FRAME_BYTES;
    clipEnds.push(frames - 1);
    const gap = Math.round((GAP_S * 1000) / FRAME_MS);
    parts.push(Buffer.from(g711Encode('mulaw', new Int16Array(gap * FRAME_BYTES))));
    frames += gap;
  }
  if (clipEnds.length === 0) throw new Error('needs codec2-examples (/usr/share/codec2/raw): scripts/install-debian-packages.sh --test');
  return { bytes: Buffer.concat(parts), clipEnds };
}
const AUDIO = program();
const TOTAL_FRAMES = AUDIO.bytes.length / FRAME_BYTES;

// ---------- the fake sync upstream: OpenAI's verbose_json, at once ----------
function fakeUpstream(): Promise<{ server: Server; url: string; calls: () => number }> {
  let calls = 0;
  const reply = JSON.stringify({
    task: 'transcribe',
    language: 'english',
    duration: 1,
    text: 'the bench upstream heard this',
    segments: [{ id: 0, start: 0, end: 1, text: 'the bench upstream heard this' }],
  });
  const server = createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => {
      calls += 1;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) });
      res.end(reply);
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, calls: () => calls })),
  );
}

const profileFlags = (name: string): string[] => (PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${join(PROFILE_DIR, name)}`] : []);

async function startGateway(upstream: string): Promise<Target> {
  const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
  const overlay = join(RUN_DIR, 'config.json');
  const most = Math.max(...LEVELS) + 10;
  writeFileSync(
    overlay,
    JSON.stringify({ http: { maxConnectionsPerAddress: most * 2, maxConnections: most * 4 }, realtime: { maxSocketsPerKey: most, maxSockets: most } }),
  );
  const { child, hit: url } = await startLogged(
    [...profileFlags('gateway'), ...startArgs()],
    {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', DATA_DIR: join(RUN_DIR, 'data'), LOG_LEVEL: 'info', ADMIN_TOKEN: ADMIN, CONFIG_FILE: overlay },
      log: join(RUN_DIR, 'gateway.log'),
    },
    gatewayUrl,
    'gateway',
  );
  await json('PUT', `${url}/admin/models/bench-stt`, ADMIN, {
    type: 'stt',
    owned_by: 'bench',
    streaming: true,
    languages: ['en'],
    pricing: { cents_per_minute: 0.6 },
    routes: [{ provider: 'openai', base_url: `${upstream}/v1`, api_key: 'sk-upstream', upstream_model: 'whisper-1' }],
  });
  const user = await json('POST', `${url}/portal/auth/signup`, undefined, { email: 'bench@example.com', password: 'bench password 123' });
  await json('POST', `${url}/admin/topups`, ADMIN, { user_id: user.user.id, amount_cents: 100_000_000, reference: 'bench' });
  const key = await json('POST', `${url}/portal/keys`, user.session_token, { name: 'bench' });
  const ws = `${url.replace(/^http/, 'ws')}/v1/audio/transcriptions/stream?${new URLSearchParams({ model: 'bench-stt', sample_rate: '8000', encoding: 'mulaw', api_key: key.api_key })}`;
  return { name: 'gateway', child, ws };
}

async function startFloor(upstream: string): Promise<Target> {
  const { child, hit } = await startLogged(
    [...profileFlags('floor'), '--import', 'tsx', 'bench/realtime-floor.ts'],
    { cwd: ROOT, env: { ...process.env, UPSTREAM: upstream }, log: join(RUN_DIR, 'floor.log') },
    (l) => (l.startsWith('listening ') ? l.slice('listening '.length) : null),
    'floor',
  );
  return { name: 'floor', child, ws: hit };
}

interface Target {
  name: string;
  child: ChildProcess;
  ws: string;
}

// ---------- one session: frames on time, probes, completions ----------
class Session {
  readonly ws: WebSocket;
  readonly opened: Promise<void>;
  startAt = 0;
  sent = 0;
  maxLate = 0;
  lateFrames = 0;
  readonly probeRtts: number[] = [];
  readonly latencies: number[] = [];
  private probeSentAt: number[] = [];
  private clipSentAt: number[] = []; // send time of each clip's last frame not yet answered
  private lastAnswered = -1;
  closedEarly: number | null = null;
  errors = 0;

  constructor(url: string) {
    this.ws = new WebSocket(url, { perMessageDeflate: false });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('message', () => resolve());
      this.ws.once('error', reject);
      this.ws.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    });
    this.ws.on('error', () => {});
    this.ws.on('message', (data) => this.onFrame(JSON.parse(String(data)) as { type: string }));
    this.ws.on('close', (code) => {
      if (this.sent < TOTAL_FRAMES * 1e9 && this.closedEarly === null && !this.stopping) this.closedEarly = code;
    });
  }

  stopping = false;

  private onFrame(f: { type: string }): void {
    const now = performance.now();
    if (f.type === 'transcription_session.updated') {
      const at = this.probeSentAt.shift();
      if (at !== undefined) this.probeRtts.push(now - at);
    } else if (f.type === 'conversation.item.input_audio_transcription.completed') {
      // The newest clip whose last frame went out and is not answered yet (a clip the VAD split
      // answers first for its head, before its last frame was sent: not counted).
      const latest = this.clipSentAt.length - 1;
      if (latest > this.lastAnswered) {
        this.latencies.push(now - this.clipSentAt[latest]!);
        this.lastAnswered = latest;
      }
    } else if (f.type === 'error') this.errors += 1;
  }

  /** Sends every frame due by `now` (ms since the level began). */
  pump(now: number): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    const due = Math.floor((now - this.startAt) / FRAME_MS) + 1;
    while (this.sent < due) {
      const late = now - (this.startAt + this.sent * FRAME_MS);
      if (late > this.maxLate) this.maxLate = late;
      if (late > LATE_MS) this.lateFrames += 1;
      const i = this.sent % TOTAL_FRAMES;
      this.ws.send(AUDIO.bytes.subarray(i * FRAME_BYTES, (i + 1) * FRAME_BYTES));
      const t = performance.now();
      if (AUDIO.clipEnds.includes(i)) this.clipSentAt.push(t);
      if (this.sent % (1000 / FRAME_MS) === 0) {
        this.probeSentAt.push(t);
        this.ws.send('{"type":"transcription_session.update","session":{}}');
      }
      this.sent += 1;
    }
  }
}

const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

interface LevelResult {
  target: string;
  sessions: number;
  opened: number;
  held: boolean;
  maxFrameLate: number;
  probeP99: number;
  probeMax: number;
  lateProbes: number;
  cpuMsPerSessionSecond: number;
  rssPerSessionMiB: number;
  latencies: number[];
  errors: number;
  closedEarly: number;
}

async function runLevel(t: Target, n: number): Promise<LevelResult> {
  const pid = t.child.pid!;
  const rss0 = rssMiB(pid);
  const sessions: Session[] = [];
  // Open in batches of 20 (an upgrade costs a key check and a hold).
  for (let i = 0; i < n; i += 20) {
    const batch = Array.from({ length: Math.min(20, n - i) }, () => new Session(t.ws));
    sessions.push(...batch);
    await Promise.allSettled(batch.map((s) => s.opened));
  }
  const open = sessions.filter((s) => s.ws.readyState === WebSocket.OPEN);
  const t0 = performance.now();
  // Staggered starts over one frame time's multiples (as calls arrive), all within the first second.
  for (const s of open) s.startAt = t0 + Math.random() * 1000;
  const cpu0 = cpuSeconds(pid);
  const end = t0 + 1000 + SECONDS * 1000;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const now = performance.now();
      for (const s of open) if (now >= s.startAt) s.pump(now);
      if (now >= end) {
        clearInterval(timer);
        resolve();
      }
    }, 2);
  });
  const cpu1 = cpuSeconds(pid);
  const rss1 = rssMiB(pid);
  await new Promise((r) => setTimeout(r, 1500)); // the last completions
  for (const s of sessions) s.stopping = true;
  await Promise.all(
    sessions.map(
      (s) =>
        new Promise<void>((resolve) => {
          if (s.ws.readyState === WebSocket.CLOSED) return resolve();
          s.ws.once('close', () => resolve());
          s.ws.close(1000);
          setTimeout(resolve, 5000).unref();
        }),
    ),
  );
  await new Promise((r) => setTimeout(r, 2000)); // sessions bill and settle before the next level
  const probes = open.flatMap((s) => s.probeRtts);
  const maxFrameLate = Math.max(0, ...open.map((s) => s.maxLate));
  const lateProbes = probes.filter((x) => x > LATE_MS).length;
  const streamedSessionSeconds = open.length * SECONDS;
  return {
    target: t.name,
    sessions: n,
    opened: open.length,
    held: open.length === n && maxFrameLate <= LATE_MS && lateProbes === 0 && open.every((s) => s.closedEarly === null),
    maxFrameLate,
    probeP99: pct(probes, 99),
    probeMax: Math.max(0, ...probes),
    lateProbes,
    cpuMsPerSessionSecond: ((cpu1 - cpu0) * 1000) / streamedSessionSeconds,
    rssPerSessionMiB: (rss1 - rss0) / Math.max(1, open.length),
    latencies: open.flatMap((s) => s.latencies),
    errors: sessions.reduce((a, s) => a + s.errors, 0),
    closedEarly: sessions.filter((s) => s.closedEarly !== null).length,
  };
}

const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');

async function main(): Promise<void> {
  const up = await fakeUpstream();
  const targets: Target[] = [];
  try {
    if (ONLY !== 'floor') targets.push(await startGateway(up.url));
    if (ONLY !== 'gateway') targets.push(await startFloor(up.url));
    console.log(
      `audio: ${AUDIO.clipEnds.length} codec2 clips with ${GAP_S} s gaps, ${((TOTAL_FRAMES * FRAME_MS) / 1000).toFixed(1)} s looped; ${SECONDS} s streamed per level; 2 ms pump`,
    );
    console.log(
      'target   sessions opened held  frame-late-max  probe-p99/max  late-probes  cpu-ms/session-s  rss-MiB/session  completed p50/p99 ms  errors closed-early',
    );
    const byLevel = new Map<number, Map<string, LevelResult>>();
    for (const n of LEVELS) {
      const row = new Map<string, LevelResult>();
      for (const t of targets) {
        const r = await runLevel(t, n);
        row.set(t.name, r);
        console.log(
          `${r.target.padEnd(8)} ${String(n).padStart(8)} ${String(r.opened).padStart(6)} ${(r.held ? 'yes' : 'NO').padEnd(5)} ${f0(r.maxFrameLate).padStart(14)}  ${`${f0(r.probeP99)}/${f0(r.probeMax)}`.padStart(13)}  ${String(r.lateProbes).padStart(11)}  ${f2(r.cpuMsPerSessionSecond).padStart(16)}  ${f2(r.rssPerSessionMiB).padStart(15)}  ${`${f0(pct(r.latencies, 50))}/${f0(pct(r.latencies, 99))}`.padStart(20)}  ${String(r.errors).padStart(6)} ${String(r.closedEarly).padStart(12)}`,
        );
      }
      byLevel.set(n, row);
    }
    const gw = targets.find((t) => t.name === 'gateway');
    const fl = targets.find((t) => t.name === 'floor');
    if (gw && fl) {
      console.log('\nsessions  cpu gateway/floor  rss gateway/floor  added latency p50 / p99 ms (gateway − floor)');
      for (const [n, row] of byLevel) {
        const g = row.get('gateway')!;
        const f = row.get('floor')!;
        console.log(
          `${String(n).padStart(8)}  ${f2(g.cpuMsPerSessionSecond / f.cpuMsPerSessionSecond).padStart(16)}  ${f2(g.rssPerSessionMiB / f.rssPerSessionMiB).padStart(16)}  ${f0(pct(g.latencies, 50) - pct(f.latencies, 50))} / ${f0(pct(g.latencies, 99) - pct(f.latencies, 99))}`,
        );
      }
    }
    console.log(`\nupstream calls: ${up.calls()}`);
    const top = Math.max(...LEVELS);
    const g = byLevel.get(top)?.get('gateway');
    if (g) {
      const why = [
        g.opened < top && `${top - g.opened} sessions not opened`,
        g.maxFrameLate > LATE_MS && `the load generator sent a frame ${f0(g.maxFrameLate)} ms late (the machine, not the gateway, fell behind)`,
        g.lateProbes > 0 && `${g.lateProbes} probes answered over ${LATE_MS} ms (max ${f0(g.probeMax)} ms)`,
        g.closedEarly > 0 && `${g.closedEarly} sessions closed early`,
      ].filter(Boolean);
      const floor = byLevel.get(top)?.get('floor');
      const context = floor
        ? `; floor ${floor.held ? 'held' : 'did not hold'}, CPU gateway/floor ${f2(g.cpuMsPerSessionSecond / floor.cpuMsPerSessionSecond)}`
        : '';
      console.log(
        g.held
          ? `PASS: ${top} concurrent sessions held real time through the gateway (no frame or probe over ${LATE_MS} ms late)${context}`
          : `FAIL: ${top} concurrent sessions not held: ${why.join('; ')}${context}`,
      );
    }
  } finally {
    for (const t of targets) t.child.kill('SIGTERM');
    up.server.close();
    await new Promise((r) => setTimeout(r, 500));
    rmSync(RUN_DIR, { recursive: true, force: true });
  }
}

await main();
