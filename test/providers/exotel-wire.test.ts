// Exotel's Voicebot wire (src/providers/carrier-wire/exotel.ts), pure: its arithmetic at each rate
// (3,200 bytes is 200 ms of 8 kHz PCM16, 100 ms at 16 kHz: the least message whatever the rate),
// the start's media_format read, and a 16 kHz or μ-law stream's audio decoded to 8 kHz and its
// replies encoded at the stream's rate.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { exotelCallee, exotelFormatOf, exotelWire } from '../../src/providers/carrier-wire/exotel.ts';
import { SpeechClip } from '../../src/speech/clip.ts';
import { loadResamplers, type Resamplers } from '../../src/speech/resample.ts';

const media = (bytes: Buffer) => ({ event: 'media', stream_sid: 'MZ1', media: { chunk: '1', timestamp: '100', payload: bytes.toString('base64') } });
const start = (media_format?: Record<string, unknown>) => ({
  event: 'start',
  stream_sid: 'MZ1',
  start: { stream_sid: 'MZ1', call_sid: 'CA1', custom_parameters: { call_id: 'c', token: 't' }, ...(media_format ? { media_format } : {}) },
});

describe("Exotel's Voicebot wire", () => {
  let resamplers: Resamplers;
  before(async () => {
    resamplers = await loadResamplers();
  });

  it('counts 8 kHz PCM16 as 16 bytes a ms both ways: a 3,200-byte message is 200 ms; the callee sends 100 ms chunks', () => {
    assert.deepEqual([exotelWire.gateway.chunkBytes, exotelWire.gateway.chunkMs], [3200, 200]);
    assert.deepEqual([exotelWire.carrier.frameMs, exotelWire.carrier.bytesPerMs], [100, 16]);
    const f = exotelWire.gateway.parse(media(Buffer.alloc(1600)));
    assert.equal(f.event === 'media' && f.samples.length, 800, '100 ms of 8 kHz samples');
    const short = exotelWire.gateway.media('MZ1', Buffer.alloc(1000)) as { media: { payload: string } };
    assert.equal(Buffer.from(short.media.payload, 'base64').length, 3200, 'padded to the least Exotel plays');
  });

  it("reads the start's media_format, and names what it cannot take", () => {
    const format = (mf?: Record<string, unknown>) => {
      const f = exotelWire.gateway.parse(start(mf));
      return f.event === 'start' ? f.format : null;
    };
    assert.deepEqual(format(), { encoding: 'pcm16', rate: 8000 });
    assert.deepEqual(format({ encoding: 'audio/x-raw', sample_rate: '16000', bit_rate: '16' }), { encoding: 'pcm16', rate: 16000 });
    assert.deepEqual(format({ encoding: 'audio/x-raw', sample_rate: 24000 }), { encoding: 'pcm16', rate: 24000 });
    assert.deepEqual(format({ encoding: 'audio/L16;rate=16000' }), { encoding: 'pcm16', rate: 16000 });
    assert.deepEqual(format({ encoding: 'audio/x-mulaw', sample_rate: '8000', bit_rate: '8' }), { encoding: 'mulaw', rate: 8000 });
    for (const mf of [
      { encoding: 'audio/x-raw', sample_rate: '44100' },
      { encoding: 'audio/x-raw', sample_rate: '16000', bit_rate: '8' },
      { encoding: 'audio/x-alaw', sample_rate: '8000' },
      { encoding: 'audio/x-mulaw', sample_rate: '16000' },
      { encoding: 'audio/opus', sample_rate: '48000' },
    ])
      assert.ok('unsupported' in exotelFormatOf({ media_format: mf }), JSON.stringify(mf));
    assert.deepEqual(exotelFormatOf({ media_format: { encoding: 'audio/x-alaw', sample_rate: '8000' } }), { unsupported: 'audio/x-alaw at 8000 Hz' });
  });

  it('a 16 kHz stream: its 100 ms chunks decoded to 100 ms at 8 kHz, the replies at 16 kHz in 100 ms messages', () => {
    const wire = exotelWire.gateway.forFormat!({ encoding: 'pcm16', rate: 16000 }, resamplers);
    assert.deepEqual([wire.chunkBytes, wire.chunkMs, wire.audio], [3200, 100, 'pcm16']);
    let samples = 0;
    for (let i = 0; i < 10; i++) {
      const f = wire.parse(media(Buffer.alloc(3200)));
      samples += f.event === 'media' ? f.samples.length : 0;
    }
    assert.ok(Math.abs(samples - 8000) <= 64, `${samples} samples of 8 kHz for 1 s at 16 kHz`);
    const second = new SpeechClip(Buffer.alloc(16_000));
    assert.equal(wire.encode!(second).length, 32_000, '1 s of 8 kHz speech is 32,000 bytes at 16 kHz');
    wire.close?.();
    const callee = exotelCallee({ encoding: 'pcm16', rate: 16000 }, resamplers);
    assert.deepEqual([callee.frameMs, callee.bytesPerMs, callee.encode!(second).length], [100, 32, 32_000]);
  });

  it('a μ-law stream: one byte a sample in, μ-law out, 400 ms to the least message', () => {
    const wire = exotelWire.gateway.forFormat!({ encoding: 'mulaw', rate: 8000 }, resamplers);
    assert.deepEqual([wire.chunkBytes, wire.chunkMs, wire.audio], [3200, 400, 'mulaw']);
    const f = wire.parse(media(Buffer.alloc(800, 0xff)));
    assert.ok(f.event === 'media' && f.samples.length === 800 && f.samples.every((s) => Math.abs(s) < 10), 'μ-law silence decoded');
    assert.equal(wire.encode!(new SpeechClip(Buffer.alloc(16_000))).length, 8000);
  });
});
