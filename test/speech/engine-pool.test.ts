// The warm engines (src/speech/engine-pool.ts) with a fake engine that answers each decode with
// the range it was asked: each utterance gets its own range of one engine's audio, padded to whole
// frames, with times from its own start; no more engines than the pool's size, the rest waiting
// in order; an engine is reused, not restarted; a failed one is dropped and replaced; a caller that
// gives up frees nothing early; close stops them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { localTranscribe } from '../../src/providers/local/transcribe.ts';
import { EnginePool } from '../../src/speech/engine-pool.ts';
import { startPocketsphinxEngine, type UtteranceEngine } from '../../src/speech/pocketsphinx-engine.ts';
import { wavOf } from '../../src/speech/wav.ts';
import { wordErrorRate } from '../../src/speech/wer.ts';
import { librivoxTranscripts, librivoxWav, missing, referencePcm } from './helpers.ts';

class FakeEngine implements UtteranceEngine {
  bytes = 0;
  ended = false;
  aborted = false;
  decodes: [number, number][] = [];
  /** Each decode waits for this (a test holds engines busy). */
  gate: Promise<void> = Promise.resolve();
  fail = false;
  readonly audioFile = '/dev/null';
  readonly models: ReadonlySet<string> = new Set(['general']);
  get frames() {
    return Math.floor(this.bytes / 2 / 160);
  }
  async append(pcm: Uint8Array) {
    this.bytes += pcm.length;
  }
  async decode(start: number, end: number) {
    this.decodes.push([start, end]);
    await this.gate;
    if (this.fail) throw new Error('engine died');
    return [{ start: start / 100, end: end / 100, text: `frames ${start}-${end}` }];
  }
  async alternatives(start: number, end: number) {
    return [(await this.decode(start, end))[0]!.text.split(' ')];
  }
  async end() {
    this.ended = true;
  }
  abort() {
    this.aborted = true;
  }
  async dispose() {}
}

/** A pool of fake engines whose decodes wait for `gate` (default: none). */
function pool(size: number, gate: Promise<void> = Promise.resolve()) {
  const engines: FakeEngine[] = [];
  const p = new EnginePool({
    size,
    start: async () => {
      const e = new FakeEngine();
      e.gate = gate;
      engines.push(e);
      return e;
    },
  });
  return { p, engines };
}

const never = new AbortController().signal;
const samples = (ms: number) => new Int16Array((ms * 16000) / 1000);

describe('the warm engines', () => {
  it('reuse one engine: each utterance its own range, padded to whole frames, its times from its own start', async () => {
    const { p, engines } = pool(2);
    const a = await p.decode(samples(1005), never); // 100.5 frames: padded to 101
    const b = await p.decode(samples(500), never);
    assert.equal(engines.length, 1, 'one engine, started once');
    assert.deepEqual(engines[0]!.decodes, [
      [0, 101],
      [101, 151],
    ]);
    assert.deepEqual(a, [{ start: 0, end: 1.01, text: 'frames 0-101' }]);
    assert.deepEqual(b, [{ start: 0, end: 0.5, text: 'frames 101-151' }]);
    p.close();
    assert.equal(engines[0]!.aborted, true, 'close stops it');
    await assert.rejects(p.decode(samples(100), never), /closed/);
  });

  it('no more engines than its size: the next utterance waits for the first engine free, in order', async () => {
    let open!: () => void;
    const { p, engines } = pool(2, new Promise<void>((r) => (open = r)));
    const order: string[] = [];
    const run = (name: string) => p.decode(samples(100), never).then(() => order.push(name));
    const first = [run('a'), run('b')]; // they hold both engines until the gate opens
    const later = [run('c'), run('d')];
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(engines.length, 2);
    assert.deepEqual(
      engines.map((e) => e.decodes.length),
      [1, 1],
      'c and d are not asked yet',
    );
    open();
    await Promise.all([...first, ...later]);
    assert.equal(engines.length, 2, 'c and d waited for a and b');
    assert.deepEqual(order, ['a', 'b', 'c', 'd']);
    p.close();
  });

  it('a failed engine is dropped and the next utterance starts another; a caller that gives up leaves the engine to finish', async () => {
    const { p, engines } = pool(1);
    await p.decode(samples(100), never);
    engines[0]!.fail = true;
    await assert.rejects(p.decode(samples(100), never), /engine died/);
    assert.equal(engines[0]!.aborted, true);
    await p.decode(samples(100), never);
    assert.equal(engines.length, 2, 'replaced');
    let open!: () => void;
    engines[1]!.gate = new Promise<void>((r) => (open = r));
    const gaveUp = new AbortController();
    const waiting = p.decode(samples(100), gaveUp.signal);
    await new Promise((r) => setImmediate(r));
    gaveUp.abort(new Error('hung up'));
    await assert.rejects(waiting, /hung up/);
    const next = p.decode(samples(100), never); // waits: the engine is still decoding
    open();
    assert.deepEqual(
      (await next).map((s) => s.text),
      ['frames 20-30'],
    );
    assert.equal(engines.length, 2, 'the same engine, not killed for the caller that gave up');
    p.close();
  });
});

describe('the warm engines on pocketsphinx, through the local provider', { skip: missing('ffmpeg', 'pocketsphinx', 'librivox') }, () => {
  it('an 8 kHz utterance held in memory is recognised on a warm engine, the same whether it comes first or after another', async () => {
    const refs = librivoxTranscripts();
    const wav = (id: '0880' | '0890') => wavOf(referencePcm(librivoxWav(id), 8000), 8000);
    const route = { id: 'stt-local#0' } as Parameters<ReturnType<typeof localTranscribe>['transcribe']>[0];
    const request = (data: Buffer) => ({
      audio: { path: '', data, filename: 'utterance.wav', contentType: 'audio/wav', bytes: data.length, durationS: 0 },
      mode: 'transcribe' as const,
      timestamps: ['segment' as const],
    });
    const run = async (ids: ('0880' | '0890')[]) => {
      let started = 0;
      const engines = new EnginePool({ size: 1, start: () => (started++, startPocketsphinxEngine({})) });
      try {
        const out = [];
        for (const id of ids) out.push(await localTranscribe({ engines }).transcribe(route, request(wav(id)), new AbortController().signal));
        return { out, started };
      } finally {
        engines.close();
      }
    };
    const warm = await run(['0880', '0890']);
    const fresh = await run(['0890']);
    assert.equal(warm.started, 1, 'one engine for both utterances');
    assert.equal(warm.out[1]!.text, fresh.out[0]!.text, 'each utterance is normalised and decoded on its own');
    for (const [i, id] of (['0880', '0890'] as const).entries()) {
      const wer = wordErrorRate([{ reference: refs.get(id)!, hypothesis: warm.out[i]!.text }]);
      assert.ok(wer < 0.6, `${id}: "${warm.out[i]!.text}" (WER ${wer.toFixed(2)} on telephone audio)`);
      assert.ok(warm.out[i]!.segments[0]!.start >= 0 && warm.out[i]!.segments.at(-1)!.end <= (warm.out[i]!.duration ?? 0) + 0.01, 'times from its own start');
    }
  });
});
