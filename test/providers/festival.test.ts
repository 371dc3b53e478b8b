// Festival's framed standard output (src/providers/local/festival.ts): each utterance's PCM comes
// out as it arrives, however the pipe splits it; anything festival prints itself (a missing voice's
// warning, a stray message) fails the stream instead of reaching a client as audio.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FestivalOutputError, festivalArgs, FESTIVAL_VOICES, unframe } from '../../src/providers/local/festival.ts';

async function read(chunks: Buffer[]): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of unframe(
    (async function* () {
      yield* chunks;
    })(),
  ))
    out.push(c);
  return Buffer.concat(out);
}

const frame = (pcm: Buffer) => Buffer.concat([Buffer.from(`AUDIO ${pcm.length}\n`), pcm]);

describe("festival's framed output", () => {
  it('yields the PCM of every utterance, split anywhere, and nothing of the headers', async () => {
    const a = Buffer.from(Array.from({ length: 64 }, (_, i) => i));
    const b = Buffer.from(Array.from({ length: 10 }, (_, i) => 200 + i));
    const stream = Buffer.concat([frame(a), frame(b)]);
    for (const cut of [1, 3, 7, 8, 9, 40, 72, 73, 80]) {
      assert.deepEqual(await read([stream.subarray(0, cut), stream.subarray(cut)]), Buffer.concat([a, b]), `cut at ${cut}`);
    }
    assert.deepEqual(await read(Array.from(stream, (x) => Buffer.from([x]))), Buffer.concat([a, b]), 'a byte at a time');
    assert.equal((await read([])).length, 0, 'no utterance: no audio, no error');
  });

  it('fails on text where a frame should start, on an odd byte count and on a stream cut inside a frame', async () => {
    const warning = Buffer.from('"Could not find any of these voices:"\n(cmu_us_slt_arctic_hts)\n');
    await assert.rejects(read([warning]), FestivalOutputError);
    await assert.rejects(read([frame(Buffer.alloc(4)), Buffer.from('WARNING\n')]), FestivalOutputError);
    await assert.rejects(read([Buffer.from('AUDIO 3\nabc')]), FestivalOutputError);
    await assert.rejects(read([Buffer.from('AUDIO 8\nabcd')]), FestivalOutputError);
    await assert.rejects(read([Buffer.from('x'.repeat(100))]), FestivalOutputError, 'a long line without a newline');
  });

  it("never puts the text in festival's arguments: they name only the voice, the speed and input.txt", () => {
    const args = festivalArgs(FESTIVAL_VOICES['en-us-slt']!, 9);
    assert.ok(args.join(' ').includes('(tts_file "input.txt" nil)'));
    assert.ok(args.join(' ').includes('(list "-r" 2.571)'), 'speed clamped to espeak-ng’s range');
    assert.throws(() => festivalArgs({ festival: 'x) (system "id")', sampleRate: 16000 }, 1));
  });
});
