import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { g711Decode, g711Encode } from '../../src/speech/g711.ts';
import { codec2Pcm, CODEC2_RAW_DIR, missing, snrDb } from './helpers.ts';

describe('G.711', { skip: missing('codec2', 'ffmpeg') }, () => {
  const speech = codec2Pcm('hts1a'); // 3 s of 8 kHz speech

  for (const law of ['mulaw', 'alaw'] as const) {
    it(`${law}: one byte a sample, decodes back to the speech at telephone quality (> 30 dB SNR)`, () => {
      const bytes = g711Encode(law, speech);
      assert.equal(bytes.length, speech.length);
      const back = g711Decode(law, bytes);
      assert.equal(back.length, speech.length);
      const snr = snrDb(speech, back);
      assert.ok(snr > 30, `SNR ${snr.toFixed(1)} dB`);
    });

    it(`${law}: decodes ffmpeg's ${law} bytes to ffmpeg's own decoding`, () => {
      // Encoders round differently (the reference notes ~6% of μ-law bytes differ between tools),
      // so the comparison is of decoded audio: ours from ffmpeg's bytes against ffmpeg's.
      const input = ['-f', 's16le', '-ar', '8000', '-ac', '1', '-i', `${CODEC2_RAW_DIR}/hts1a.raw`];
      const bytes = execFileSync('ffmpeg', ['-v', 'error', ...input, '-f', law, '-']);
      const theirs = execFileSync('ffmpeg', ['-v', 'error', '-f', law, '-ar', '8000', '-ac', '1', '-i', '-', '-f', 's16le', '-'], { input: bytes });
      const ours = g711Decode(law, bytes);
      assert.ok(snrDb(new Int16Array(theirs.buffer, theirs.byteOffset, theirs.length / 2), ours) > 40);
    });

    it(`${law}: chunking does not matter (the codec is stateless)`, () => {
      const whole = g711Encode(law, speech);
      const parts = [speech.subarray(0, 1001), speech.subarray(1001, 1002), speech.subarray(1002)].map((p) => g711Encode(law, p));
      assert.deepEqual(Buffer.concat(parts), Buffer.from(whole));
    });
  }

  it('μ-law and A-law silence and full scale are the standard bytes', () => {
    assert.deepEqual([...g711Encode('mulaw', new Int16Array([0]))], [0xff]);
    assert.deepEqual([...g711Encode('alaw', new Int16Array([0]))], [0xd5]);
    assert.ok(g711Decode('mulaw', new Uint8Array([0x80]))[0]! > 32000);
    assert.ok(g711Decode('alaw', new Uint8Array([0xaa]))[0]! > 32000);
  });
});
