// Reading the WAV an upstream answers with: its header found wherever the chunks split it (an
// extra chunk before `data`, WAVE_FORMAT_EXTENSIBLE), the bytes after it streamed on untouched,
// and anything that is not a WAV passed through whole.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readWavHeader, splitWav, wavOf, WAV_PCM } from '../../src/speech/wav.ts';

async function* pieces(bytes: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function all(it: AsyncIterable<Buffer>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of it) out.push(c);
  return Buffer.concat(out);
}

const samples = Int16Array.from({ length: 1000 }, (_, i) => ((i * 37) % 2000) - 1000);
const data = Buffer.from(samples.buffer);

/** A WAV with a LIST chunk before `data` and a WAVE_FORMAT_EXTENSIBLE fmt naming PCM. */
function extensibleWav(): Buffer {
  const fmt = Buffer.alloc(8 + 40);
  fmt.write('fmt ', 0, 'latin1');
  fmt.writeUInt32LE(40, 4);
  fmt.writeUInt16LE(0xfffe, 8);
  fmt.writeUInt16LE(1, 10);
  fmt.writeUInt32LE(48000, 12);
  fmt.writeUInt16LE(16, 22);
  fmt.writeUInt16LE(WAV_PCM, 8 + 24);
  const list = Buffer.concat([Buffer.from('LIST', 'latin1'), Buffer.from([5, 0, 0, 0]), Buffer.from('INFOx', 'latin1'), Buffer.alloc(1)]);
  const head = Buffer.concat([Buffer.from('RIFF\0\0\0\0WAVE', 'latin1'), fmt, list, Buffer.from('data\xff\xff\xff\xff', 'latin1')]);
  return Buffer.concat([head, data]);
}

describe('WAV headers from an upstream', () => {
  it('reads the header of a plain and of an extensible WAV, and asks for more bytes when cut short', () => {
    assert.deepEqual(readWavHeader(wavOf(samples, 16000)), { format: WAV_PCM, channels: 1, sampleRate: 16000, bitsPerSample: 16, dataOffset: 44 });
    const ext = extensibleWav();
    const h = readWavHeader(ext);
    assert.ok(h && h !== 'more');
    assert.deepEqual([h.format, h.sampleRate, h.dataOffset], [WAV_PCM, 48000, ext.length - data.length]);
    assert.equal(readWavHeader(ext.subarray(0, 30)), 'more');
    assert.equal(readWavHeader(Buffer.from('RI')), 'more');
    assert.equal(readWavHeader(Buffer.from('ID3\x04 an mp3')), null);
    assert.equal(readWavHeader(Buffer.from('RIFF\0\0\0\0AVI LIST')), null);
  });

  it('streams the bytes after the header untouched, whatever the chunking; a stream that is not a WAV whole', async () => {
    for (const size of [1, 7, 44, 45, 4096]) {
      const plain = await splitWav(pieces(wavOf(samples, 16000), size));
      assert.equal(plain.header?.sampleRate, 16000);
      assert.equal(plain.headerBytes.length, 44);
      assert.ok((await all(plain.body)).equals(data), `chunks of ${size}`);
      const ext = await splitWav(pieces(extensibleWav(), size));
      assert.ok((await all(ext.body)).equals(data), `extensible, chunks of ${size}`);
      const raw = await splitWav(pieces(data, size));
      assert.equal(raw.header, null);
      assert.ok((await all(raw.body)).equals(data), `not a WAV, chunks of ${size}`);
    }
  });
});
