// The recording's pieces without a call: the recorder's timeline (src/voice/recorder.ts: a side's
// gap is silence, the agent's audio queued behind what plays, a `clear` drops what was not played,
// a late callee frame keeps its place) and the store's life of a recording (src/voice/recordings.ts:
// the partial file made a WAV, a file cut mid-frame by a crash, none when nothing was written, the
// retention sweep, a call's actor retired), on the embedded store and the fs blobs, with a fake clock.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { CallRecorder } from '../../src/voice/recorder.ts';
import { CallRecordings } from '../../src/voice/recordings.ts';
import { openEmbeddedStore } from '../../src/store/embedded/store.ts';
import { openFsBlobs } from '../../src/blobs/fs.ts';
import { g711Encode } from '../../src/speech/g711.ts';
import { pcmWavHeader } from '../../src/speech/wav.ts';
import { loadResamplers } from '../../src/speech/resample.ts';
import { goertzelCoeff, goertzelPower } from '../../src/speech/tone.ts';
import { parseWav, rms } from './recording-checks.ts';

const log = pino({ level: 'silent' });
const resamplers = await loadResamplers();
const tone = (ms: number, amp = 8000) => Int16Array.from({ length: ms * 8 }, (_, i) => Math.round(amp * Math.sin(i / 3)));
const bytesOfPcm = (s: Int16Array) => Buffer.from(s.buffer, s.byteOffset, s.byteLength);

/** A recorder on a clock the test moves, writing to memory. */
function recorder() {
  let now = 1_000_000;
  const out: Buffer[] = [];
  const r = new CallRecorder({ append: async (b) => void out.push(b), done: async () => undefined, now: () => now, log, resamplers });
  const wav = () => {
    const pcm = Buffer.concat(out);
    return parseWav(Buffer.concat([pcmWavHeader(pcm.length, 8000, 2), pcm]));
  };
  return { r, wav, tick: (ms: number) => (now += ms) };
}

describe('the call recorder', () => {
  it("lays each side on the call's clock: silence where a side is quiet, the agent's chunks queued behind what plays", async () => {
    const { r, wav, tick } = recorder();
    r.begin(1_000_000);
    // 0–1 s: the callee speaks in 20 ms frames, in real time.
    for (let i = 0; i < 50; i++) {
      tick(20);
      r.heard(tone(20));
    }
    // 1–2 s: silence from the callee (frames of zeros); the agent sends 1 s of μ-law at once (the playback's lead).
    tick(0);
    r.sent(Buffer.from(g711Encode('mulaw', tone(1000))), 'mulaw', 8000);
    for (let i = 0; i < 50; i++) {
      tick(20);
      r.heard(new Int16Array(160));
    }
    // 2–2.5 s: no frames at all from the carrier (a gap), then 0.5 s of callee speech.
    tick(500);
    for (let i = 0; i < 25; i++) {
      tick(20);
      r.heard(tone(20));
    }
    await r.close();
    const w = wav();
    assert.ok(Math.abs(w.seconds - 3) < 0.05, `${w.seconds} s`);
    assert.ok(rms(w.left, 0.05, 0.95) > 3000 && rms(w.right, 0.05, 0.95) === 0, 'the callee alone at first');
    assert.ok(rms(w.right, 1.05, 1.95) > 3000 && rms(w.left, 1.05, 1.95) === 0, 'the agent alone next');
    assert.ok(rms(w.left, 2.05, 2.45) === 0, "the carrier's gap is silence");
    assert.ok(rms(w.left, 2.55, 2.95) > 3000, 'the callee after the gap, at its time');
  });

  it("a clear drops the agent's audio the carrier had not played; PCM16 at 16 kHz is taken down to 8 kHz", async () => {
    const { r, wav, tick } = recorder();
    r.begin(1_000_000);
    const wide = Int16Array.from({ length: 16_000 * 2 }, (_, i) => Math.round(8000 * Math.sin(i / 6)));
    r.sent(bytesOfPcm(wide), 'pcm16', 16_000); // 2 s queued
    tick(500);
    r.cleared(); // a barge-in at 0.5 s
    for (let i = 0; i < 50; i++) {
      tick(20);
      r.heard(tone(20));
    }
    await r.close();
    const w = wav();
    assert.ok(rms(w.right, 0.05, 0.45) > 3000, 'what played before the clear');
    assert.equal(rms(w.right, 0.55, w.seconds), 0, 'nothing of what was dropped');
    assert.ok(Math.abs(w.seconds - 1.5) < 0.05, `${w.seconds} s`);
  });

  it("a 16 or 24 kHz stream's agent channel is resampled, not decimated: a 5 kHz tone leaves no 3 kHz alias, the speech band is kept", async () => {
    for (const rate of [16_000, 24_000]) {
      const { r, wav, tick } = recorder();
      r.begin(1_000_000);
      // 2 s of the agent in 100 ms chunks as they play: 1 kHz (the speech band) and 5 kHz (above
      // what 8 kHz holds; every 2nd or 3rd sample of it is a 3 kHz tone).
      const chunk = rate / 10;
      const sine = (hz: number, i: number) => 6000 * Math.sin((2 * Math.PI * hz * i) / rate);
      for (let c = 0; c < 20; c++) {
        r.sent(bytesOfPcm(Int16Array.from({ length: chunk }, (_, k) => Math.round(sine(1000, c * chunk + k) + sine(5000, c * chunk + k)))), 'pcm16', rate);
        tick(100);
      }
      await r.close();
      const agent = wav().right.subarray(800, 15_200); // 0.1–1.9 s
      const db = (hz: number) => 10 * Math.log10(goertzelPower(agent, goertzelCoeff(hz, 8000)) / ((6000 * agent.length) / 2) ** 2); // against the 6000-amplitude sine
      assert.ok(db(1000) > -1, `${rate} Hz: the 1 kHz tone kept (${db(1000).toFixed(1)} dB)`);
      assert.ok(db(3000) < -50, `${rate} Hz: no 3 kHz alias of the 5 kHz tone (${db(3000).toFixed(1)} dB)`);
    }
  });
});

describe('recordings in the store', () => {
  async function setup() {
    const dir = await mkdtemp(join(tmpdir(), 'gw-recordings-'));
    const store = await openEmbeddedStore({ dir: join(dir, 'store') });
    const blobs = await openFsBlobs(join(dir, 'blobs'));
    let now = Date.UTC(2026, 0, 1);
    const limits = new Map<string, number>();
    const deps = {
      store,
      blobs,
      dataDir: dir,
      accountRetentionDays: async (a: string) => limits.get(a) ?? null,
      defaultRetentionDays: 30,
      logger: log,
      now: () => now,
      resamplers: async () => resamplers,
    };
    const recs = new CallRecordings(deps);
    await recs.init();
    return {
      recs,
      deps,
      blobs,
      dir,
      limits,
      advance: (ms: number) => (now += ms),
      close: async () => {
        await store.close();
        await blobs.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  }

  it('a partial file (cut mid-frame, as by kill -9) becomes a valid WAV; none written is `none`; the retention sweep deletes it when due', async () => {
    const t = await setup();
    try {
      await t.recs.begin({ callId: 'call_a', account: 'user:1', model: 'm', modelRetentionDays: 2 });
      await t.recs.begin({ callId: 'call_b', account: 'user:2', model: 'm', modelRetentionDays: 2 });
      t.limits.set('user:3', 5);
      await t.recs.begin({ callId: 'call_c', account: 'user:3', model: 'm', modelRetentionDays: 2 });
      // What a crashed gateway left: 1 s of stereo frames and half of one more.
      await writeFile(join(t.dir, 'recordings', 'call_a.pcm'), Buffer.alloc(32_000 + 2, 1));
      await writeFile(join(t.dir, 'recordings', 'call_c.pcm'), Buffer.alloc(8, 1));
      // A fresh instance finalizes them (no live recorder).
      const fresh = new CallRecordings(t.deps);
      await Promise.all([fresh.finalize('call_a'), fresh.finalize('call_b'), fresh.finalize('call_c')]);
      await fresh.finalize('call_a'); // a replay: done already
      const a = await fresh.view('user:1', 'call_a');
      assert.deepEqual([a?.status, a?.duration_seconds], ['ready', 1]);
      const { key } = await fresh.blob('user:1', 'call_a', 'wav');
      const bytes = Buffer.concat(await (await t.blobs.get(key))!.toArray());
      assert.equal(parseWav(bytes).seconds, 1);
      await assert.rejects(stat(join(t.dir, 'recordings', 'call_a.pcm')), 'the partial file is gone');
      assert.equal((await fresh.view('user:2', 'call_b'))?.status, 'none');
      await assert.rejects(fresh.blob('user:2', 'call_b', 'wav'), /nothing was recorded/);
      assert.equal(await fresh.view('user:2', 'call_a'), null, "another account's is not seen");
      // Retention: the model's 2 days for call_a, the account's 5 for call_c.
      t.advance(2 * 86_400_000 - 1000);
      assert.equal(await fresh.sweep(), 0);
      t.advance(2000);
      assert.equal(await fresh.sweep(), 1);
      assert.equal((await fresh.view('user:1', 'call_a'))?.status, 'deleted');
      assert.equal(await t.blobs.stat(key), null, 'its blob is gone');
      assert.equal((await fresh.view('user:3', 'call_c'))?.status, 'ready');
      t.advance(3 * 86_400_000);
      assert.equal(await fresh.sweep(), 1);
      assert.equal((await fresh.view('user:3', 'call_c'))?.status, 'deleted');
      await fresh.forget('call_b');
      assert.equal(await fresh.view('user:2', 'call_b'), null, "retired with the call's actor");
    } finally {
      await t.close();
    }
  });
});
