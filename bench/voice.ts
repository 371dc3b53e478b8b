// Voice calls (issue 31 §6): the gateway (separate process, the esbuild bundle as `npm start` runs
// it, embedded store) places calls on `twilio` routes whose Twilio is this process
// (bench/voice-carrier.ts: REST, signed callbacks, a Media Streams socket per call sending the
// callee's audio paced at 20 ms). The callee's speech is tts-local's (espeak-ng through
// /v1/audio/speech, 8 kHz μ-law), trimmed to its first and last voiced frame. In one run:
//   turn latency — the end of the callee's speech (its last voiced frame sent) → the first agent
//                  `media` frame received; the reply is the intent pack's (pre-rendered). With a
//                  scripted stt upstream (an OpenAI-compatible fake here: the text is known at once)
//                  the target is p50 ≤ the endpointing silence + 100 ms; with `stt-local`
//                  (pocketsphinx on the utterance) it is reported. Each turn's stages (the agent
//                  turn's `stages`, src/voice/turn-stages.ts) are reported p50/p95, and the
//                  gateway's `latency_ms` against the carrier's figure for the same turn.
//   five at once — `--concurrent` (5) calls on `stt-local`, each turn's speech after a random
//                  0–2 s, against the baseline of the same turns one call at a time in the same
//                  run: p50, p95 and p95/p50 (target < 2), the stages, and the CPU per turn of the
//                  gateway and of its children (ffmpeg, pocketsphinx).
//   barge-in     — the callee speaks over the agent's long first message: the frame that takes its
//                  speech heard past `min_speech_ms` (voiced frames and short pauses, as the gateway's
//                  detector counts them) sent → the gateway's `clear` received; target ≤ 150 ms
//                  (judged on p95).
//   baseline     — measured in the same run: a WebSocket ping → pong on a call's own media socket,
//                  and one recognition request straight to the scripted stt upstream; the gateway's
//                  own share of a turn is compared with them.
//   scale        — N calls at once, each agent playing the same long message (rendered once):
//                  p50 / p99 / max gap between consecutive agent frames, underruns (frames that
//                  arrived after the carrier needed them: frame i is due at first + 20·i), gateway
//                  CPU per call-second; target p99 ≤ 40 ms, no underruns.
//
//   npm run bench:voice -- [--quick] [--calls 100] [--seconds 10] [--turns 20] [--concurrent 5] [--only turns] [--no-record]
// `--quick`: 6 turns, 2 with stt-local alone and 2 per call at once, 4 barge-ins, 20 calls of 3 s.
// Calls of the scripted turn and barge-in parts run two at a time. `--only turns` skips the
// barge-ins and the scale part.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { g711Decode } from '../src/speech/g711.ts';
import { loadVoiceDetectors } from '../src/speech/vad.ts';
import { FakeServer, sendAnswer } from '../test/fakes/fake-server.ts';
import { BenchTwilio, FRAME_BYTES, FRAME_MS } from './voice-carrier.ts';
import { allChildrenCpuSeconds, cpuSeconds, json, payingAccount, ROOT, startGatewayProcess } from './process.ts';

const args = process.argv.slice(2);
const arg = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const QUICK = args.includes('--quick');
const CALLS = Number(arg('--calls') ?? (QUICK ? 20 : 100));
const SECONDS = Number(arg('--seconds') ?? (QUICK ? 3 : 10));
const TURNS = Number(arg('--turns') ?? (QUICK ? 6 : 20));
const LOCAL_TURNS = QUICK ? 2 : 8;
const CONCURRENT = Number(arg('--concurrent') ?? 5);
const TURNS_PER_CALL = QUICK ? 2 : 6;
const ONLY_TURNS = arg('--only') === 'turns';
/** The scale part's calls record both sides (issue 41: the frame gap holds with recording on); `--no-record` to compare. */
const RECORD = !args.includes('--no-record');
const STAGES = ['endpointing', 'queued', 'recognition', 'agent', 'synthesis', 'first_frame'] as const;
type Stages = Record<`${(typeof STAGES)[number]}_ms`, number>;
/** One turn: the carrier's figure, and the gateway's agent turn (its latency and stages). */
interface Timed {
  carrier: number;
  latency: number | null;
  stages: Stages | null;
}
const BARGES = QUICK ? 4 : 12;
const ENDPOINTING_MS = 700;
const MIN_SPEECH_MS = 400;
const RUN_DIR = mkdtempSync(join(tmpdir(), 'bench-voice-'));
const SID = 'ACbench';
const TOKEN = 'bench-twilio-token';
const TO = '+919800000001';
const HEARD = 'the ATM did not give money but my account got debited';
// About SECONDS of speech at espeak's 175 words a minute.
const MESSAGE = Array.from({ length: Math.ceil((SECONDS * 175) / 60 / 10) }, () => 'This is a long message from the agent to measure pacing.').join(' ');
const BARGE_MESSAGE = 'Hello, this is your bank calling about a recent transaction on your account. Please stay on the line while I read out the details.';

const pct = (xs: number[], p: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]! : NaN);
const ms = (x: number) => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : 'n/a');
const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

async function main(): Promise<void> {
  const began = performance.now();
  const twilio = await BenchTwilio.start(SID, TOKEN);
  const stt = await FakeServer.start(async (x) => sendAnswer(x, { text: HEARD }));
  const defaults = JSON.parse(readFileSync(join(ROOT, 'config', 'default.json'), 'utf8')) as { models: unknown[] };
  const route = { provider: 'twilio', base_url: twilio.url, account_sid: SID, api_key: TOKEN, from: '+14155550100' };
  const voice = (id: string, sttModel: string) => ({
    id,
    type: 'voice',
    owned_by: 'bench',
    stt_model: sttModel,
    tts_model: 'tts-local',
    intent_model: 'intent-demo',
    price_per_minute_cents: 1,
    countries: ['IN'],
    languages: ['en-IN'],
    voices: ['en-us'],
    pricing: {},
    routes: [route],
  });
  const scripted = {
    id: 'stt-bench',
    type: 'stt',
    owned_by: 'bench',
    languages: ['en-IN'],
    pricing: { cents_per_minute: 1 },
    routes: [{ provider: 'openai', base_url: `${stt.url}/v1`, api_key: 'k', upstream_model: 'gpt-4o-transcribe' }],
  };
  const config = join(RUN_DIR, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      voice: { maxConcurrentCalls: CALLS + 10 },
      models: [...defaults.models, scripted, voice('voice-bench', 'stt-local'), voice('voice-turn', 'stt-bench'), voice('voice-turn-local', 'stt-local')],
    }),
  );
  const gw = await startGatewayProcess(RUN_DIR, { env: { CONFIG_FILE: config } });
  try {
    const acc = await payingAccount(gw.url, 1_000_000);
    const place = async (body: Record<string, unknown>) => (await json('POST', `${gw.url}/v1/voice/call`, acc.key, { to: TO, ...body })).id as string;
    const hangup = (id: string) => json('POST', `${gw.url}/v1/voice/calls/${id}/hangup`, acc.key, {}).catch(() => undefined);
    const utterance = await speech(gw.url, acc.key, HEARD);
    const question = await speech(gw.url, acc.key, 'wait, I have a question about my card');
    console.log(
      `voice bench${QUICK ? ' (--quick)' : ''}: callee utterances ${utterance.length * FRAME_MS} ms and ${question.length * FRAME_MS} ms of voiced audio`,
    );

    // ---- turn latency: the callee speaks first; the agent answers with the pack's pre-rendered reply ----
    const pings: number[] = [];
    /** The agent turn that answered the callee (polled: it is recorded once its reply has played). */
    const answerOf = async (id: string): Promise<{ latency_ms?: number; stages?: Stages } | undefined> => {
      for (let i = 0; i < 100; i++) {
        const c = await json('GET', `${gw.url}/v1/voice/calls/${id}`, acc.key);
        const t = (c.transcript as { role: string; latency_ms?: number; stages?: Stages }[]).find((x) => x.role === 'agent' && x.latency_ms !== undefined);
        if (t) return t;
        await sleep(100);
      }
      return undefined;
    };
    const turn = async (model: string, timeoutMs: number, waitMs = 400): Promise<Timed | null> => {
      const id = await place({ model, first_message: { mode: 'wait_for_callee' }, turn: { endpointing_ms: { min: ENDPOINTING_MS } } });
      const leg = twilio.leg(id);
      await leg.opened;
      await sleep(waitMs); // the detector settles on the line's silence
      pings.push(await leg.ping());
      const sent = await leg.say(utterance);
      const end = sent.at(-1)!;
      const first = await leg.next('media', end, timeoutMs);
      if (first !== null) await leg.quiet(1000, 30_000); // the reply played: its turn is recorded
      await hangup(id);
      if (first === null) return null;
      const agent = await answerOf(id);
      return { carrier: first - end, latency: agent?.latency_ms ?? null, stages: agent?.stages ?? null };
    };
    await turn('voice-turn', 10_000); // renders the reply once (the measured turns find it cached)
    const scriptedTurns = (await inPairs(TURNS, () => turn('voice-turn', 10_000))).filter((x): x is Timed => x !== null);
    const latencies = scriptedTurns.map((t) => t.carrier);
    const direct: number[] = [];
    const wav = Buffer.from(g711Decode('mulaw', Buffer.concat(utterance)).buffer);
    for (let i = 0; i < TURNS; i++) direct.push(await recogniseDirect(stt.url, wav));
    // stt-local: one call at a time (the baseline), then CONCURRENT calls at once; each turn's
    // speech after a random 0.4–2.4 s of the line's silence, the same in both.
    const localTurn = () => turn('voice-turn-local', 20_000, 400 + Math.random() * 2000);
    const cpu = () => ({ own: cpuSeconds(gw.child.pid!), children: allChildrenCpuSeconds(gw.child.pid!), at: performance.now() });
    await localTurn(); // the engines' first start (page cache) out of the figures
    const c0 = cpu();
    const alone: Timed[] = [];
    for (let i = 0; i < LOCAL_TURNS; i++) alone.push(...[await localTurn()].filter((x): x is Timed => x !== null));
    const c1 = cpu();
    const together = (
      await Promise.all(
        Array.from({ length: CONCURRENT }, async () => {
          const out: Timed[] = [];
          for (let i = 0; i < TURNS_PER_CALL; i++) out.push(...[await localTurn()].filter((x): x is Timed => x !== null));
          return out;
        }),
      )
    ).flat();
    const c2 = cpu();
    const perTurn = (a: ReturnType<typeof cpu>, b: ReturnType<typeof cpu>, n: number) =>
      `gateway ${(((b.own - a.own) * 1000) / n).toFixed(0)} ms + its children (ffmpeg, pocketsphinx) ${(((b.children - a.children) * 1000) / n).toFixed(0)} ms of CPU a turn`;
    const localFigures = {
      alone: `${perTurn(c0, c1, Math.max(1, alone.length))}`,
      together: `${perTurn(c1, c2, Math.max(1, together.length))}; ${((c2.own - c1.own + c2.children - c1.children) / ((c2.at - c1.at) / 1000)).toFixed(2)} cores busy on average`,
    };
    // ---- barge-in: the callee speaks over the agent's long first message ----
    // The gateway cuts once the speech it heard (voiced frames and short pauses: the detector's
    // voicedMs, src/speech/vad.ts) reaches min_speech_ms, not at the 400th ms sent: the frame that
    // does, found by the same detector on the same audio after the line's silence.
    const bargeFrame = await heardAt(question, MIN_SPEECH_MS);
    const bargeIns = await inPairs(ONLY_TURNS ? 0 : BARGES, async () => {
      const id = await place({ model: 'voice-turn', first_message: { text: BARGE_MESSAGE }, turn: { interruption: { min_speech_ms: MIN_SPEECH_MS } } });
      const leg = twilio.leg(id);
      await leg.opened;
      const playing = await leg.next('media', 0, 15_000);
      if (playing === null) throw new Error('the agent never spoke');
      await sleep(600);
      const sent = await leg.say(question);
      const crossed = sent[bargeFrame]!; // the frame that takes the speech heard to min_speech_ms left
      const clear = await leg.next('clear', sent[0]!, 2_000);
      await hangup(id);
      return clear === null ? null : clear - crossed;
    });
    const barges = bargeIns.filter((x): x is number => x !== null);

    // ---- scale: CALLS calls at once, each agent playing MESSAGE ----
    const body = { model: 'voice-bench', max_duration_seconds: SECONDS + 60, first_message: { text: MESSAGE }, record: RECORD };
    const cpu0 = cpuSeconds(gw.child.pid!);
    const ids: string[] = [];
    if (!ONLY_TURNS) {
      const warm = await place(body); // the message is rendered once and cached; the measured calls reuse it
      await waitPlayed(twilio, [warm]);
      await hangup(warm);
      ids.push(...(await Promise.all(Array.from({ length: CALLS }, () => place(body)))));
      await waitPlayed(twilio, ids);
    }
    const scaleCpu = cpuSeconds(gw.child.pid!) - cpu0;
    const gaps: number[] = [];
    let audioS = 0;
    let underruns = 0;
    for (const id of ids) {
      const a = twilio.leg(id).media;
      for (let i = 1; i < a.length; i++) gaps.push(a[i]! - a[i - 1]!);
      for (let i = 0; i < a.length; i++) if (a[i]! > a[0]! + FRAME_MS * i) underruns += 1;
      audioS += (a.length * FRAME_MS) / 1000;
    }
    await Promise.all(ids.map(hangup));

    // ---- figures ----
    const floor = pct(direct, 50) + pct(pings, 50);
    const own = pct(latencies, 50) - ENDPOINTING_MS;
    console.log(
      `baseline (same run): media-socket ping round trip p50 ${pings.length ? pct(pings, 50).toFixed(2) : 'n/a'} ms; the scripted stt upstream straight p50 ${pct(direct, 50).toFixed(2)} ms`,
    );
    console.log(
      `turn latency, scripted stt (endpointing ${ENDPOINTING_MS} ms): p50 ${ms(pct(latencies, 50))}, p95 ${ms(pct(latencies, 95))}, max ${ms(Math.max(...latencies))} over ${latencies.length} of ${TURNS} turns`,
    );
    console.log(
      `  beyond the endpointing silence p50 ${ms(own)}: ${(own / floor).toFixed(0)}× the baseline's ${floor.toFixed(2)} ms (socket round trip + recognition straight)`,
    );
    console.log(
      `  ${verdict(pct(latencies, 50) <= ENDPOINTING_MS + 100 && latencies.length === TURNS)} (p50 <= endpointing + 100 ms = ${ENDPOINTING_MS + 100} ms, every turn answered)`,
    );
    report('scripted stt', scriptedTurns);
    const local = alone.map((t) => t.carrier);
    const at5 = together.map((t) => t.carrier);
    console.log(
      `turn latency, stt-local, one call at a time (the baseline): p50 ${ms(pct(local, 50))}, p95 ${ms(pct(local, 95))} over ${local.length} of ${LOCAL_TURNS} turns answered; ${localFigures.alone}`,
    );
    report('stt-local alone', alone);
    console.log(
      `turn latency, stt-local, ${CONCURRENT} calls at once: p50 ${ms(pct(at5, 50))}, p95 ${ms(pct(at5, 95))}, max ${ms(Math.max(...at5))} over ${at5.length} of ${CONCURRENT * TURNS_PER_CALL} turns answered; ${localFigures.together}`,
    );
    console.log(
      `  against the baseline: p50 ${(pct(at5, 50) / pct(local, 50)).toFixed(2)}×, p95 ${(pct(at5, 95) / pct(local, 95)).toFixed(2)}×; p95/p50 ${(pct(at5, 95) / pct(at5, 50)).toFixed(2)} (alone ${(pct(local, 95) / pct(local, 50)).toFixed(2)})`,
    );
    console.log(`  ${verdict(pct(at5, 95) < 2 * pct(at5, 50))} (p95 < 2 × p50 with ${CONCURRENT} calls at once)`);
    report(`stt-local, ${CONCURRENT} at once`, together);
    if (!ONLY_TURNS) {
      console.log(
        `barge-in (min_speech_ms ${MIN_SPEECH_MS}): speech past it → clear received p50 ${ms(pct(barges, 50))}, p95 ${ms(pct(barges, 95))}, max ${ms(Math.max(...barges))} over ${barges.length} of ${BARGES}; ${(pct(barges, 50) / pct(pings, 50)).toFixed(0)}× the socket round trip`,
      );
      console.log(`  ${verdict(pct(barges, 95) <= 150 && barges.length === BARGES)} (p95 <= 150 ms, every barge-in cleared)`);
      console.log(`scale: ${CALLS} calls at once${RECORD ? ', each recorded' : ''}, ${audioS.toFixed(0)} s of agent audio received`);
      console.log(
        `  inter-frame gap ms: p50 ${pct(gaps, 50).toFixed(1)}, p99 ${pct(gaps, 99).toFixed(1)}, max ${Math.max(...gaps).toFixed(1)}; underruns ${underruns} of ${gaps.length + ids.length} frames`,
      );
      console.log(`  gateway CPU: ${((scaleCpu / audioS) * 100).toFixed(2)}% of a core per call-second (${scaleCpu.toFixed(1)} s over the run)`);
      console.log(`  ${verdict(pct(gaps, 99) <= 40 && underruns === 0)} (p99 gap <= 40 ms, no underruns)`);
    }
    console.log(`(${((performance.now() - began) / 1000).toFixed(0)} s, the gateway's build and start included)`);
  } finally {
    gw.child.kill('SIGTERM');
    twilio.close();
    await stt.close();
    rmSync(RUN_DIR, { recursive: true, force: true });
  }
}

/** A part's turns: each stage's p50/p95 (the gateway's agent turns), and the gateway's latency against the carrier's for the same turn. */
function report(what: string, turns: Timed[]): void {
  const timed = turns.filter((t) => t.stages !== null && t.latency !== null);
  const q = (xs: number[]) => `${ms(pct(xs, 50))}/${ms(pct(xs, 95))}`;
  console.log(`  stages (${what}, p50/p95 over ${timed.length} turns): ${STAGES.map((s) => `${s} ${q(timed.map((t) => t.stages![`${s}_ms`]))}`).join(', ')}`);
  const off = timed.map((t) => t.latency! - t.carrier);
  console.log(
    `  the gateway's latency_ms − the carrier's figure: p50 ${ms(pct(off, 50))}, min ${ms(Math.min(...off))}, max ${ms(Math.max(...off))} (the carrier's view is the reference)`,
  );
}

/** `n` runs of `work`, two at a time (a 2-core machine: more would measure the queue). */
async function inPairs<T>(n: number, work: () => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += 2) out.push(...(await Promise.all(Array.from({ length: Math.min(2, n - i) }, work))));
  return out;
}

/** `text` spoken by tts-local as 8 kHz μ-law frames, from its first voiced frame to its last. */
async function speech(url: string, key: string, text: string): Promise<Buffer[]> {
  const res = await fetch(`${url}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'tts-local', input: text, voice: 'en-us', response_format: 'mulaw', sample_rate: 8000 }),
  });
  if (!res.ok) throw new Error(`speech: ${res.status} ${await res.text()}`);
  const audio = Buffer.from(await res.arrayBuffer());
  const frames: Buffer[] = [];
  for (let i = 0; i < audio.length; i += FRAME_BYTES)
    frames.push(Buffer.concat([audio.subarray(i, i + FRAME_BYTES), Buffer.alloc(Math.max(0, i + FRAME_BYTES - audio.length), 0xff)]));
  const voiced = frames.map((f) => {
    const s = g711Decode('mulaw', f);
    return Math.sqrt(s.reduce((n, x) => n + x * x, 0) / s.length) > 500;
  });
  return frames.slice(voiced.indexOf(true), voiced.lastIndexOf(true) + 1);
}

/** One recognition request straight to the scripted upstream (what the gateway's turn must at least wait for), ms. */
async function recogniseDirect(url: string, pcm: Buffer): Promise<number> {
  const form = new FormData();
  form.append('file', new Blob([pcm]), 'utterance.wav');
  form.append('model', 'gpt-4o-transcribe');
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/audio/transcriptions`, { method: 'POST', body: form });
  await res.json();
  return performance.now() - t0;
}

/** Until each call's agent audio has stopped arriving for a second (its first message played). */
async function waitPlayed(twilio: BenchTwilio, ids: string[]): Promise<void> {
  const deadline = Date.now() + (SECONDS + 120) * 1000;
  while (Date.now() < deadline) {
    await sleep(500);
    const now = performance.now();
    if (
      ids.every((id) => {
        const a = twilio.leg(id).media;
        return a.length > 0 && now - a.at(-1)! > 1000;
      })
    )
      return;
  }
  throw new Error('the agents did not finish speaking in time');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

/** The index of the 20 ms μ-law frame at which the gateway's detector has heard `ms` of speech (after 600 ms of silence, as the line had). */
async function heardAt(frames: Buffer[], ms: number): Promise<number> {
  const vad = (await loadVoiceDetectors()).create({ sampleRate: 8000, silence_duration_ms: 700, prefix_padding_ms: 300 });
  try {
    vad.push(new Int16Array((600 * 8000) / 1000));
    for (let i = 0; i < frames.length; i++) {
      vad.push(g711Decode('mulaw', frames[i]!));
      if (vad.voicedMs >= ms) return i;
    }
    throw new Error(`the detector never heard ${ms} ms of speech in the barge-in clip`);
  } finally {
    vad.destroy();
  }
}
