// Speech to text through the gateway (issue 17 §5), each figure against a baseline measured in the
// same run. The gateway runs as a child process, started as `npm start` does (the esbuild bundle);
// the fake upstreams (test/fakes: OpenAI's audio API, Sarvam's batch job API) run in this process.
//
// 1. Sync overhead: a 10 s clip of real speech (16 kHz WAV, 320 KB) posted N times, sequentially,
//    to the fake OpenAI-compatible audio upstream directly (with the fields the gateway sends it)
//    and through the gateway (`POST /v1/audio/transcriptions`, response_format json, a model routed
//    to that fake), interleaved with what the gateway does for every call before any provider sees
//    it, timed alone in this process: storing the upload (blob put, fsynced), examineAudio (one
//    ffmpeg run decoding the whole clip, for its exact billed duration and its container), and a
//    bare `ffmpeg -version` (the cost of starting the process). p50/p90/p99 of each, what the
//    gateway adds, its CPU per call (its own, and its children's: ffmpeg).
// 2. One-hour job: an hour of speech as mp3 (32 kbps, 16 kHz mono: the LibriVox clips looped, made
//    here with ffmpeg, 14.4 MB) submitted as a job to a model routed to the fake Sarvam job API
//    (pollMs 100); run first, on the fresh process. Wall time from the POST to the job read back
//    completed (and when each provider call came), the gateway's peak RSS (VmHWM) against its own
//    idle figure just before and at the 202, and the exact charge: the wallet's
//    balance_microcents before and after against ceil(decoded seconds) × price, decoded here with
//    ffmpeg; PASS or FAIL.
// 3. stt-local's real-time factor on the LibriVox clips of pocketsphinx-testdata (each, and all five
//    joined: 24.7 s): processing seconds over audio seconds through the gateway's sync endpoint and
//    directly (ffmpeg decode → src/speech/pocketsphinx.ts transcribePcm, as the offline provider
//    does), alternating, over rounds; in wall time and in CPU time (the process's own and its
//    children's, which a shared machine's load moves less); the difference is the gateway's share.
// 4. Four-hour job on stt-local with diarization (issue 27): four hours of 16 kHz FLAC, the LibriVox
//    clips joined (24.7 s of speech) every 30 minutes and silence between (so the offline engine
//    decodes all four hours and recognises 8 blocks of speech: a few minutes, not the 72 of four
//    hours of talk), on a gateway process of its own started for it. Its peak RSS (VmHWM) against
//    its idle figure before the upload, its VmRSS after, the wall and CPU time, the charge to the
//    micro-cent. PASS when the peak is within FOUR_HOUR_BOUND_MIB of idle (on d9a440b the local path
//    kept the decoded recording in memory: 460 MB for four hours).
//
// Needs the Debian packages of scripts/install-debian-packages.sh --test.
//   npm run bench:transcription [-- --n 100] [--rounds 2] [--rss-trace] [--only sync,hour,rtf,four-hour]
// --n: sync calls per target (part 1); --rounds: of the stt-local series (part 3); --rss-trace
// prints the gateway's VmRSS every 20 ms of the one-hour job.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openAsBlob, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { startOpenAIUpstream } from '../test/fakes/openai-upstream.ts';
import { startSarvamUpstream } from '../test/fakes/sarvam-upstream.ts';
import { openFsBlobs } from '../src/blobs/fs.ts';
import { examineAudio } from '../src/transcription/audio.ts';
import { decodeToPcm, PCM_BYTES_PER_SECOND } from '../src/speech/ffmpeg.ts';
import { transcribePcm } from '../src/speech/pocketsphinx.ts';
import { loadVoiceDetectors } from '../src/speech/vad.ts';
import { ADMIN, childrenCpuSeconds, cpuSeconds, json, memMiB, median, payingAccount, startGatewayProcess, stop } from './process.ts';

const { values: opts } = parseArgs({
  options: {
    n: { type: 'string', default: '100' },
    'rss-trace': { type: 'boolean', default: false },
    rounds: { type: 'string', default: '2' },
    only: { type: 'string', default: 'hour,sync,rtf,four-hour' },
  },
});
const ONLY = new Set(opts.only!.split(','));
/** How far above its idle RSS a four-hour job may take the gateway (part 4). */
const FOUR_HOUR_BOUND_MIB = 150;
const N = Math.max(10, Number(opts.n) || 100);
const RTF_ROUNDS = Math.max(1, Number(opts.rounds) || 2);
const LIBRIVOX = '/usr/share/pocketsphinx/test/data/librivox';
/** The job model's price: 0.6 cent a minute, i.e. exactly 10,000 µ¢ a second. */
const MICROCENTS_PER_MINUTE = 600_000;
const UPSTREAM_KEY = 'sk-upstream-bench';

for (const tool of ['ffmpeg', 'ffprobe', 'pocketsphinx_batch']) {
  if (
    !execFileSync('sh', ['-c', `command -v ${tool} || true`])
      .toString()
      .trim()
  )
    throw new Error(`${tool} is missing: run scripts/install-debian-packages.sh --test`);
}
if (!existsSync(join(LIBRIVOX, 'fileids'))) throw new Error('pocketsphinx-testdata is missing: run scripts/install-debian-packages.sh --test');

const RUN_DIR = mkdtempSync(join(tmpdir(), 'bench-stt-'));
const ms = (x: number) => `${x.toFixed(1)} ms`;
/** Nearest-rank percentile. */
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil(p * xs.length) - 1)]!;

// ---------- the audio, made here from the LibriVox clips ----------
function ffmpeg(args: string[]): void {
  execFileSync('ffmpeg', ['-v', 'error', '-y', ...args], { cwd: RUN_DIR });
}
/** Exact seconds of a file decoded as the gateway decodes it (16 kHz mono s16le), counted here. */
async function decodedSeconds(path: string): Promise<{ bytes: number; seconds: number }> {
  const child = spawn('ffmpeg', ['-v', 'error', '-i', path, '-map', '0:a:0', '-ac', '1', '-ar', '16000', '-c:a', 'pcm_s16le', '-f', 's16le', 'pipe:1'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let bytes = 0;
  for await (const chunk of child.stdout) bytes += (chunk as Buffer).length;
  return { bytes, seconds: bytes / PCM_BYTES_PER_SECOND };
}

const ids = readFileSync(join(LIBRIVOX, 'fileids'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter(Boolean);
const clips = ids.map((id) => join(LIBRIVOX, `${id}.wav`));
const list = join(RUN_DIR, 'clips.txt');
writeFileSync(list, clips.map((c) => `file '${c}'\n`).join(''));
const WAV_ARGS = ['-ac', '1', '-ar', '16000', '-c:a', 'pcm_s16le', '-map_metadata', '-1', '-fflags', '+bitexact', '-flags:a', '+bitexact'];
ffmpeg(['-f', 'concat', '-safe', '0', '-i', list, ...WAV_ARGS, 'all.wav']); // the five clips joined, 24.7 s
ffmpeg(['-i', 'all.wav', '-t', '10', ...WAV_ARGS, 'clip10.wav']);
const hourStarted = performance.now();
ffmpeg(['-i', 'all.wav', '-c:a', 'libmp3lame', '-b:a', '32k', 'all.mp3']);
ffmpeg(['-stream_loop', '-1', '-i', 'all.mp3', '-t', '3600', '-c', 'copy', 'hour.mp3']); // frames copied, not re-encoded
const hourMadeMs = performance.now() - hourStarted;
const CLIP10 = join(RUN_DIR, 'clip10.wav');
const ALL = join(RUN_DIR, 'all.wav');
const HOUR = join(RUN_DIR, 'hour.mp3');

// ---------- fakes, gateway, models, account ----------
const openai = await startOpenAIUpstream({ apiKey: UPSTREAM_KEY });
const sarvam = await startSarvamUpstream({ apiKey: UPSTREAM_KEY });
const configFile = join(RUN_DIR, 'config.json');
writeFileSync(configFile, JSON.stringify({ transcription: { pollMs: 100, maxPollMs: 200 } }));
const gw = await startGatewayProcess(RUN_DIR, { env: { CONFIG_FILE: configFile } });
const pid = gw.child.pid!;
const sttModel = (route: object, extra: object) => ({
  type: 'stt',
  owned_by: 'bench',
  languages: ['en-US'],
  modes: ['transcribe'],
  pricing: { cents_per_minute: MICROCENTS_PER_MINUTE / 1e6 },
  routes: [route],
  ...extra,
});
await json(
  'PUT',
  `${gw.url}/admin/models/bench-whisper`,
  ADMIN,
  sttModel({ provider: 'openai', base_url: `${openai.url}/v1`, api_key: UPSTREAM_KEY, upstream_model: 'whisper-1' }, { timestamps: 'segment' }),
);
await json(
  'PUT',
  `${gw.url}/admin/models/bench-sarvam-jobs`,
  ADMIN,
  sttModel(
    { provider: 'sarvam', base_url: sarvam.url, api_key: UPSTREAM_KEY, upstream_model: 'saaras:v3', timeout_ms: 120_000 },
    { jobs: true, diarization: true, languages: ['en-IN'] },
  ),
);
const account = await payingAccount(gw.url, 10_000);
const auth = { authorization: `Bearer ${account.key}` };
const balance = async () => (await json('GET', `${gw.url}/portal/wallet`, account.session)).balance_microcents as number;

/** A multipart body serialized once by the platform's FormData (so every request sends the same bytes). */
async function multipart(fields: Record<string, string>, file: { path: string; name: string; type: string }): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([readFileSync(file.path)], { type: file.type }), file.name);
  const req = new Request('http://bench.invalid/', { method: 'POST', body: form });
  return { body: Buffer.from(await req.arrayBuffer()), contentType: req.headers.get('content-type')! };
}

const load0 = loadavg()[0]!.toFixed(2);
try {
  const hour = ONLY.has('hour') ? await oneHourJob() : [];
  const sync = ONLY.has('sync') ? await syncOverhead() : [];
  const rtf = ONLY.has('rtf') ? await realTimeFactor() : [];
  const fourHour = ONLY.has('four-hour') ? await fourHourJob() : [];
  console.log(
    `\nSpeech to text, node ${process.version}, ${availableParallelism()} cores shared by this process (fakes, client) and the gateway; load average ${load0} at the start, ${loadavg()[0]!.toFixed(2)} at the end`,
  );
  for (const block of [sync, hour, rtf, fourHour]) if (block.length > 0) console.log(`\n${block.join('\n')}`);
} finally {
  await stop(gw.child);
  await openai.close();
  await sarvam.close();
  rmSync(RUN_DIR, { recursive: true, force: true });
}

// ---------- 2. one-hour job ----------
async function oneHourJob(): Promise<string[]> {
  const bytes = statSync(HOUR).size;
  const declared = Number(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', HOUR]).toString().trim());
  const decoded = await decodedSeconds(HOUR);
  const examine0 = performance.now();
  const examined = await examineAudio(HOUR);
  const examineMs = performance.now() - examine0;

  await new Promise((r) => setTimeout(r, 1000)); // idle
  const idleRss = memMiB(pid, 'VmRSS');
  const idleHwm = memMiB(pid, 'VmHWM');
  let sampledPeak = idleRss;
  let t0 = performance.now();
  const trace: [number, number][] = [];
  const sampler = setInterval(() => {
    const rss = memMiB(pid, 'VmRSS');
    sampledPeak = Math.max(sampledPeak, rss);
    if (opts['rss-trace']) trace.push([performance.now() - t0, rss]);
  }, 20);
  const before = await balance();
  t0 = performance.now();
  const jobsBefore = sarvam.jobs.size;
  const cpu0 = cpuSeconds(pid);
  const children0 = childrenCpuSeconds(pid);

  const wall0 = Date.now();
  const form = new FormData();
  form.append('model', 'bench-sarvam-jobs');
  form.append('num_speakers', '2');
  form.append('file', await openAsBlob(HOUR, { type: 'audio/mpeg' }), 'hour.mp3'); // streamed from disk
  const created = await fetch(`${gw.url}/v1/audio/transcriptions/jobs`, { method: 'POST', headers: auth, body: form });
  const acceptedMs = performance.now() - t0;
  const uploadHwm = memMiB(pid, 'VmHWM'); // the peak while the upload was received and stored
  const job0 = (await created.json()) as { id: string };
  if (created.status !== 202) throw new Error(`job refused: ${created.status} ${JSON.stringify(job0)}`);
  let job: { status: string; duration?: number; segments?: unknown[]; error?: unknown };
  do {
    await new Promise((r) => setTimeout(r, 50));
    job = await json('GET', `${gw.url}/v1/audio/transcriptions/jobs/${job0.id}`, account.key);
  } while ((job.status === 'queued' || job.status === 'processing') && performance.now() - t0 < 120_000);
  const wallMs = performance.now() - t0;
  const cpu = cpuSeconds(pid) - cpu0;
  const childrenCpu = childrenCpuSeconds(pid) - children0;
  clearInterval(sampler);
  const peakHwm = memMiB(pid, 'VmHWM');
  if (opts['rss-trace']) console.log(`VmRSS over the job (ms MiB): ${trace.map(([t, r]) => `${t.toFixed(0)} ${r.toFixed(0)}`).join(', ')}`);
  if (job.status !== 'completed') throw new Error(`the job ended ${job.status}: ${JSON.stringify(job.error)}`);

  // The charge: settled when the job completes; read until the wallet moves (at most 5 s).
  let after = await balance();
  for (const until = Date.now() + 5000; after === before && Date.now() < until; after = await balance()) await new Promise((r) => setTimeout(r, 50));
  const seconds = Math.ceil(decoded.bytes / PCM_BYTES_PER_SECOND);
  const expected = (seconds * MICROCENTS_PER_MINUTE) / 60;
  const charged = before - after;

  // Where the time went, from the fake provider's own records (arrival times of each call).
  const pj = [...sarvam.jobs.values()].slice(jobsBefore);
  const at = (path: RegExp, method = 'POST') => sarvam.requests.find((r) => r.at >= wall0 && r.method === method && path.test(r.path))?.at ?? NaN;
  const createdAt = at(/^\/speech-to-text\/job\/v1$/) - wall0;
  const putAt = at(/^\/blob\//, 'PUT') - wall0;
  const startAt = at(/\/start$/) - wall0;
  const doneAt = at(/download-files$/) - wall0;
  return [
    `One-hour job (bench-sarvam-jobs → fake Sarvam job API, pollMs 100; the gateway a child process):`,
    `  upload: ${(bytes / 1e6).toFixed(1)} MB mp3 (32 kbps, 16 kHz mono; LibriVox looped, made in ${ms(hourMadeMs)}); declared ${declared.toFixed(3)} s, decoded ${decoded.seconds.toFixed(4)} s (${decoded.bytes} bytes of PCM)`,
    `  wall time POST → read back completed: ${(wallMs / 1000).toFixed(2)} s (202 after ${ms(acceptedMs)}; provider job created at ${ms(createdAt)}, file PUT at ${ms(putAt)}, started at ${ms(startAt)}, result fetched at ${ms(doneAt)})`,
    `  examineAudio on the hour alone (this process): ${ms(examineMs)}, ${examined.durationS.toFixed(4)} s`,
    `  gateway CPU: ${cpu.toFixed(2)} s own + ${childrenCpu.toFixed(2)} s of its children (ffprobe, ffmpeg)`,
    `  provider jobs created ${pj.length}, uploads ${pj.map((j) => j.uploads).join(',')}, the file it got ${pj[0]?.file?.bytes.length ?? 0} bytes (${pj[0]?.file?.bytes.equals(readFileSync(HOUR)) ? 'identical' : 'DIFFERENT'}); ${job.segments?.length ?? 0} segments, duration ${job.duration} s`,
    `  gateway RSS: idle ${idleRss.toFixed(1)} MiB (VmHWM ${idleHwm.toFixed(1)}); VmHWM at the 202 ${uploadHwm.toFixed(1)} MiB (+${(uploadHwm - idleHwm).toFixed(1)}: receiving and storing the upload),`,
    `    after the job ${peakHwm.toFixed(1)} MiB (+${(peakHwm - idleHwm).toFixed(1)}; VmRSS sampled every 20 ms peaked at ${sampledPeak.toFixed(1)}, +${(sampledPeak - idleRss).toFixed(1)} over idle); the upload is ${(bytes / 1024 / 1024).toFixed(1)} MiB`,
    `  charge: ${charged} µ¢ taken; expected ceil(${decoded.seconds.toFixed(4)}) = ${seconds} s × ${MICROCENTS_PER_MINUTE / 60} µ¢/s = ${expected} µ¢ → ${charged === expected ? 'PASS' : 'FAIL'}`,
  ];
}

// ---------- 4. four-hour job on stt-local, diarized ----------
async function fourHourJob(): Promise<string[]> {
  const made0 = performance.now();
  // 30 minutes: the five clips, then silence to the half hour; eight of them, as one FLAC.
  ffmpeg(['-i', 'all.wav', '-af', 'apad=whole_dur=1800', ...WAV_ARGS, 'half-hour.wav']);
  ffmpeg(['-stream_loop', '7', '-i', 'half-hour.wav', '-c:a', 'flac', 'four-hours.flac']);
  rmSync(join(RUN_DIR, 'half-hour.wav'));
  const FOUR = join(RUN_DIR, 'four-hours.flac');
  const madeMs = performance.now() - made0;
  const decoded = await decodedSeconds(FOUR);
  const dir = mkdtempSync(join(RUN_DIR, 'four-'));
  const own = await startGatewayProcess(dir, {});
  const gwPid = own.child.pid!;
  try {
    const acct = await payingAccount(own.url, 1_000);
    const wallet = async () => (await json('GET', `${own.url}/portal/wallet`, acct.session)).balance_microcents as number;
    await new Promise((r) => setTimeout(r, 1000));
    const idleRss = memMiB(gwPid, 'VmRSS');
    const idleHwm = memMiB(gwPid, 'VmHWM');
    const before = await wallet();
    const cpu0 = cpuSeconds(gwPid);
    const children0 = childrenCpuSeconds(gwPid);
    const t0 = performance.now();
    const form = new FormData();
    form.append('model', 'stt-local');
    form.append('diarize', 'true');
    form.append('file', await openAsBlob(FOUR, { type: 'audio/flac' }), 'four-hours.flac');
    const created = await fetch(`${own.url}/v1/audio/transcriptions/jobs`, { method: 'POST', headers: { authorization: `Bearer ${acct.key}` }, body: form });
    const job0 = (await created.json()) as { id: string };
    if (created.status !== 202) throw new Error(`four-hour job refused: ${created.status} ${JSON.stringify(job0)}`);
    let job: { status: string; duration?: number; segments?: { speaker: string }[]; error?: unknown };
    do {
      await new Promise((r) => setTimeout(r, 500));
      job = await json('GET', `${own.url}/v1/audio/transcriptions/jobs/${job0.id}`, acct.key);
    } while ((job.status === 'queued' || job.status === 'processing') && performance.now() - t0 < 1_800_000);
    const wallMs = performance.now() - t0;
    const cpu = cpuSeconds(gwPid) - cpu0;
    const childrenCpu = childrenCpuSeconds(gwPid) - children0;
    const peakHwm = memMiB(gwPid, 'VmHWM');
    if (job.status !== 'completed') throw new Error(`the four-hour job ended ${job.status}: ${JSON.stringify(job.error)}`);
    await new Promise((r) => setTimeout(r, 2000));
    const afterRss = memMiB(gwPid, 'VmRSS');
    const charged = before - (await wallet());
    const seconds = Math.ceil(decoded.bytes / PCM_BYTES_PER_SECOND);
    const expected = Math.ceil((seconds * 0.1 * 1e6) / 60); // stt-local: 0.1 cent a minute
    const rise = peakHwm - idleHwm;
    return [
      `Four-hour job (stt-local, diarize, a gateway process of its own):`,
      `  upload: ${(statSync(FOUR).size / 1e6).toFixed(1)} MB FLAC, made in ${ms(madeMs)}: ${decoded.seconds.toFixed(1)} s decoded (${(decoded.bytes / 1e6).toFixed(0)} MB of PCM), 8 × 24.7 s of speech`,
      `  wall time POST → completed: ${(wallMs / 1000).toFixed(1)} s; gateway CPU ${cpu.toFixed(1)} s own + ${childrenCpu.toFixed(1)} s of its children (ffmpeg, pocketsphinx); ${job.segments?.length ?? 0} segments, ${new Set(job.segments?.map((s) => s.speaker)).size} speakers, duration ${job.duration} s`,
      `  gateway RSS: idle ${idleRss.toFixed(1)} MiB (VmHWM ${idleHwm.toFixed(1)}); peak over the job (VmHWM) ${peakHwm.toFixed(1)} MiB, +${rise.toFixed(1)} MiB; VmRSS 2 s after ${afterRss.toFixed(1)} MiB`,
      `    bound: peak within ${FOUR_HOUR_BOUND_MIB} MiB of idle → ${rise <= FOUR_HOUR_BOUND_MIB ? 'PASS' : 'FAIL'}`,
      `  charge: ${charged} µ¢; expected ceil(${decoded.seconds.toFixed(3)}) = ${seconds} s at 0.1 ¢/min = ${expected} µ¢ → ${Math.abs(charged - expected) <= 1 ? 'PASS' : 'FAIL'}`,
    ];
  } finally {
    await stop(own.child);
  }
}

// ---------- 1. sync overhead ----------
async function syncOverhead(): Promise<string[]> {
  const clip = { path: CLIP10, name: 'audio.wav', type: 'audio/wav' };
  // What the gateway sends the upstream for whisper-1 (src/providers/openai/transcribe.ts).
  const direct = await multipart({ model: 'whisper-1', response_format: 'verbose_json', 'timestamp_granularities[]': 'segment' }, clip);
  const viaGateway = await multipart({ model: 'bench-whisper', response_format: 'json' }, { ...clip, name: 'clip10.wav' });
  const targets = [
    {
      name: 'direct',
      pool: new Pool(openai.url, { connections: 1 }),
      headers: { authorization: `Bearer ${UPSTREAM_KEY}` },
      form: direct,
      times: [] as number[],
    },
    { name: 'gateway', pool: new Pool(gw.url, { connections: 1 }), headers: auth, form: viaGateway, times: [] as number[] },
  ];
  const once = async (t: (typeof targets)[number]) => {
    const t0 = performance.now();
    const res = await t.pool.request({
      method: 'POST',
      path: '/v1/audio/transcriptions',
      headers: { ...t.headers, 'content-type': t.form.contentType },
      body: t.form.body,
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${t.name}: ${res.statusCode} ${text}`);
    return performance.now() - t0;
  };
  // The gateway's own steps, timed alone in this process: the upload stored (streamed in 64 KiB
  // chunks, fsynced), then probed and decoded (examineAudio).
  const blobs = await openFsBlobs(join(RUN_DIR, 'bench-blobs'));
  const bytes = readFileSync(CLIP10);
  async function* chunks() {
    for (let at = 0; at < bytes.length; at += 65536) yield bytes.subarray(at, at + 65536);
  }
  const examine: number[] = [];
  const store: number[] = [];
  const bare: number[] = [];
  const steps = async () => {
    const t = performance.now();
    await new Promise((resolve, reject) => execFile('ffmpeg', ['-version'], (err) => (err ? reject(err) : resolve(null))));
    bare.push(performance.now() - t);
    const t0 = performance.now();
    await blobs.put('uploads/bench', chunks());
    const t1 = performance.now();
    await examineAudio(CLIP10, { maxSeconds: 30.5 });
    store.push(t1 - t0);
    examine.push(performance.now() - t1);
    await blobs.delete('uploads/bench');
  };
  for (let i = 0; i < 10; i++) {
    for (const t of targets) await once(t); // warm-up
    await steps();
  }
  store.length = 0;
  examine.length = 0;
  bare.length = 0;
  let cpu = 0;
  let childrenCpu = 0;
  const tasks = [
    ...targets.map((t) => async () => {
      const cpu0 = cpuSeconds(pid);
      const children0 = childrenCpuSeconds(pid);
      t.times.push(await once(t));
      if (t.name === 'gateway') {
        cpu += cpuSeconds(pid) - cpu0;
        childrenCpu += childrenCpuSeconds(pid) - children0;
      }
    }),
    steps,
  ];
  // Each round runs the three in a rotating order, so a slow moment of the machine falls on all.
  for (let i = 0; i < N; i++) for (let k = 0; k < tasks.length; k++) await tasks[(i + k) % tasks.length]!();
  const cpuMs = (cpu * 1000) / N;
  const childrenMs = (childrenCpu * 1000) / N;
  for (const t of targets) await t.pool.close();
  const [d, g] = targets.map((t) => t.times) as [number[], number[]];
  const line = (name: string, xs: number[]) =>
    `  ${name.padEnd(8)} p50 ${ms(pct(xs, 0.5))}  p90 ${ms(pct(xs, 0.9))}  p99 ${ms(pct(xs, 0.99))}  mean ${ms(xs.reduce((a, b) => a + b, 0) / xs.length)}`;
  const added50 = pct(g, 0.5) - pct(d, 0.5);
  return [
    `Sync overhead: 10 s of speech (16 kHz WAV, ${(statSync(CLIP10).size / 1000).toFixed(0)} KB), ${N} sequential calls each after 10 warm-up, interleaved:`,
    line('direct', d),
    line('gateway', g),
    `  added by the gateway: p50 ${ms(added50)}, p99 ${ms(pct(g, 0.99) - pct(d, 0.99))}`,
    `  per call the gateway stores the upload (blob put, fsynced; timed alone, interleaved: p50 ${ms(median(store))}, ${((median(store) / added50) * 100).toFixed(0)}% of what it adds at p50),`,
    `  then probes and decodes it for its exact duration (examineAudio: one ffmpeg run; p50 ${ms(median(examine))}, p90 ${ms(pct(examine, 0.9))}, ${((median(examine) / added50) * 100).toFixed(0)}%);`,
    `  (a bare \`ffmpeg -version\`, i.e. starting the process and loading its libraries: p50 ${ms(median(bare))}; examineAudio starts one);`,
    `  the rest, by difference (key, hold and settle, multipart in and out): ${ms(added50 - median(examine) - median(store))}`,
    `  gateway CPU per call: ${cpuMs.toFixed(1)} ms own + ${childrenMs.toFixed(1)} ms of its children (ffmpeg)`,
  ];
}

// ---------- 3. stt-local real-time factor ----------
async function realTimeFactor(): Promise<string[]> {
  const detectors = await loadVoiceDetectors();
  /** Wall ms and CPU s (the process's own and its reaped children's: ffmpeg, pocketsphinx_batch) of one call. */
  const timed = async (who: number, call: () => Promise<string>) => {
    const cpu0 = cpuSeconds(who) + childrenCpuSeconds(who);
    const t0 = performance.now();
    const text = await call();
    return { ms: performance.now() - t0, cpu: cpuSeconds(who) + childrenCpuSeconds(who) - cpu0, text };
  };
  const directly = (path: string) => timed(process.pid, async () => (await transcribePcm(decodeToPcm({ path }), { detectors })).text);
  const throughGateway = async (path: string) => {
    const form = await multipart({ model: 'stt-local', response_format: 'json' }, { path, name: 'clip.wav', type: 'audio/wav' });
    return timed(pid, async () => {
      const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { ...auth, 'content-type': form.contentType }, body: form.body });
      const out = (await res.json()) as { text: string };
      if (res.status !== 200) throw new Error(`stt-local: ${res.status} ${JSON.stringify(out)}`);
      return out.text;
    });
  };
  await directly(clips[1]!); // warm-up: the VAD's WASM, the page cache
  await throughGateway(clips[1]!);
  type Run = Awaited<ReturnType<typeof directly>>;
  const rows = await Promise.all(
    [...clips, ALL].map(async (path, i) => ({
      name: path === ALL ? 'all five joined' : ids[i]!.slice(-4),
      path,
      seconds: (await decodedSeconds(path)).seconds,
      direct: [] as Run[],
      gateway: [] as Run[],
      differ: 0,
    })),
  );
  for (let round = 0; round < RTF_ROUNDS; round++) {
    for (const [i, row] of rows.entries()) {
      // Alternate which goes first.
      const gatewayFirst = (i + round) % 2 === 1;
      const g1 = gatewayFirst ? await throughGateway(row.path) : null;
      const d = await directly(row.path);
      const g = g1 ?? (await throughGateway(row.path));
      row.direct.push(d);
      row.gateway.push(g);
      if (d.text !== g.text) row.differ += 1;
    }
  }
  const each = rows.slice(0, -1);
  const joined = rows.at(-1)!;
  const audio = each.reduce((sum, r) => sum + r.seconds, 0);
  type Path = 'direct' | 'gateway';
  /** Per round: the rows' summed wall seconds (or CPU seconds) over their summed audio. */
  const perRound = (path: Path, rs: typeof rows, of: (r: Run) => number) =>
    Array.from({ length: RTF_ROUNDS }, (_, k) => rs.reduce((sum, r) => sum + of(r[path][k]!), 0) / rs.reduce((sum, r) => sum + r.seconds, 0));
  const wall = (r: Run) => r.ms / 1000;
  const cpu = (r: Run) => r.cpu;
  const spread = (xs: number[], digits = 3) =>
    `${median(xs).toFixed(digits)}` + (xs.length > 1 ? ` [${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}]` : '');
  const both = (rs: typeof rows) =>
    (['direct', 'gateway'] as const).map((p) => `${p} ${spread(perRound(p, rs, wall))} (CPU ${spread(perRound(p, rs, cpu))})`).join(', ');
  const share = (of: (r: Run) => number) =>
    Array.from({ length: RTF_ROUNDS }, (_, k) => (each.reduce((sum, r) => sum + of(r.gateway[k]!) - of(r.direct[k]!), 0) / each.length) * 1000);
  return [
    `stt-local real-time factor: processing s / audio s, start to transcript, a pocketsphinx_batch started per call (its model load included);`,
    `CPU: s of CPU (the process and its ffmpeg and pocketsphinx children) / audio s. The LibriVox clips of pocketsphinx-testdata,`,
    `${RTF_ROUNDS} rounds, median [range]; direct = ffmpeg decode → transcribePcm in this process:`,
    ...rows.map(
      (r) =>
        `  ${r.name.padEnd(16)} ${r.seconds.toFixed(2).padStart(5)} s  ${(['direct', 'gateway'] as const).map((p) => `${p} ${median(r[p].map(wall).map((x) => x / r.seconds)).toFixed(3)}`).join('  ')}${r.differ ? `  (transcripts differ in ${r.differ} round(s))` : ''}`,
    ),
    `  five clips, ${audio.toFixed(1)} s in all: ${both(each)}`,
    `  joined, one call of ${joined.seconds.toFixed(1)} s: ${both([joined])}`,
    `  the gateway's share per call (gateway − direct, mean over the five clips): ${spread(share(wall), 0)} ms wall, ${spread(share(cpu), 0)} ms CPU`,
    `  (it stores the upload, probes and decodes it once more than the direct path, holds and settles, answers)`,
  ];
}
