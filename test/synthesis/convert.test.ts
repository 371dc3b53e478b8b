// From a provider's audio to the client's format, in the process (src/speech/convert.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadResamplers } from '../../src/speech/resample.ts';
import { convertSpeech } from '../../src/speech/convert.ts';

/** 24 kHz s16le of a 440 Hz tone, `seconds` long. */
function tone(seconds: number): Buffer {
  const samples = new Int16Array(Math.round(24_000 * seconds)).map((_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 24_000)));
  return Buffer.from(samples.buffer);
}

async function pieces(chunks: Buffer[], target: { format: 'pcm' | 'mulaw'; sampleRate: number }): Promise<Buffer[]> {
  const out: Buffer[] = [];
  const source = (async function* () {
    yield* chunks;
  })();
  for await (const c of convertSpeech({ format: 'pcm', sampleRate: 24_000 }, source, target, { resamplers: loadResamplers })) out.push(c);
  return out;
}

describe('speech conversion', () => {
  it("sends a long first chunk's first 20 ms alone, then the rest: the same bytes as converted whole", async () => {
    const audio = tone(1.4); // what OpenAI's first 65 KB hold
    for (const target of [
      { format: 'mulaw', sampleRate: 8000 },
      { format: 'pcm', sampleRate: 16_000 },
    ] as const) {
      const sliced = await pieces([audio], target);
      const bytesPerSecond = target.format === 'mulaw' ? 8000 : 32_000;
      assert.ok(sliced[0]!.length > 0 && sliced[0]!.length <= 0.02 * bytesPerSecond, `first piece ${sliced[0]!.length} bytes`);
      assert.ok(sliced.length >= 2);
      // Fed in 100 ms chunks instead, the bytes are the same.
      const chunked = await pieces(
        Array.from({ length: 14 }, (_, i) => audio.subarray(i * 4800, (i + 1) * 4800)),
        target,
      );
      assert.deepEqual(Buffer.concat(sliced), Buffer.concat(chunked), target.format);
      assert.equal(Buffer.concat(sliced).length, 1.4 * bytesPerSecond);
    }
  });
});
