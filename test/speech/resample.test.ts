import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { before, describe, it } from 'node:test';
import { loadResamplers, ResamplerError, type Resamplers } from '../../src/speech/resample.ts';
import { codec2Pcm, CODEC2_RAW_DIR, concatSamples, librivoxWav, missing, referencePcm, snrDb } from './helpers.ts';

/** sox's very-high-quality resampling of a raw 8 kHz file: the reference. */
function soxRate(rawPath: string, to: number): Int16Array {
  const out = execFileSync('sox', ['-t', 'raw', '-r', '8000', '-e', 'signed', '-b', '16', '-c', '1', rawPath, '-t', 'raw', '-', 'rate', '-v', String(to)]);
  return new Int16Array(out.buffer, out.byteOffset, out.length / 2);
}

function whole(resamplers: Resamplers, from: number, to: number, input: Int16Array, chunks?: number[]): Int16Array {
  const r = resamplers.create({ from, to });
  const parts: Int16Array[] = [];
  let at = 0;
  for (const size of chunks ?? [input.length]) {
    parts.push(r.process(input.subarray(at, at + size)));
    at += size;
  }
  if (at < input.length) parts.push(r.process(input.subarray(at)));
  parts.push(r.flush());
  r.destroy();
  return concatSamples(parts);
}

describe('resampling', { skip: missing('codec2', 'ffmpeg') }, () => {
  let resamplers: Resamplers;
  const speech8k = codec2Pcm('hts1a');
  before(async () => {
    resamplers = await loadResamplers();
  });

  it('8 → 16 kHz: exactly twice the samples, aligned with sox and as clean (> 30 dB SNR)', () => {
    const out = whole(resamplers, 8000, 16000, speech8k);
    assert.equal(out.length, speech8k.length * 2);
    const snr = snrDb(soxRate(`${CODEC2_RAW_DIR}/hts1a.raw`, 16000), out);
    assert.ok(snr > 30, `SNR ${snr.toFixed(1)} dB`);
  });

  it('8 → 24 kHz (OpenAI pcm16) and 16 → 8 kHz (telephony out) match sox and ffmpeg', () => {
    const up = whole(resamplers, 8000, 24000, speech8k);
    assert.equal(up.length, speech8k.length * 3);
    assert.ok(snrDb(soxRate(`${CODEC2_RAW_DIR}/hts1a.raw`, 24000), up) > 30);
    const speech16k = referencePcm(librivoxWav('0880'));
    const down = whole(resamplers, 16000, 8000, speech16k);
    assert.equal(down.length, speech16k.length / 2);
    const snr = snrDb(referencePcm(librivoxWav('0880'), 8000), down);
    assert.ok(snr > 20, `SNR ${snr.toFixed(1)} dB against ffmpeg`);
  });

  it('streams: any chunking gives the same samples as one call', () => {
    const once = whole(resamplers, 8000, 16000, speech8k);
    const chunked = whole(resamplers, 8000, 16000, speech8k, [1, 159, 160, 7, 3000, 1, 320, 999]);
    assert.deepEqual(chunked, once);
    const frames = whole(
      resamplers,
      8000,
      16000,
      speech8k,
      Array.from({ length: 149 }, () => 160),
    );
    assert.deepEqual(frames, once);
  });

  it('refuses bad settings and use after destroy', () => {
    assert.throws(() => resamplers.create({ from: 0, to: 16000 }), ResamplerError);
    assert.throws(() => resamplers.create({ from: 8000, to: 16000, quality: 11 }), ResamplerError);
    const r = resamplers.create({ from: 8000, to: 16000 });
    r.destroy();
    assert.throws(() => r.process(new Int16Array(160)), /destroyed/);
  });
});
