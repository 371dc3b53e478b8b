// The socket's recent audio: slices across chunks (whole ones copied as they are, cut ones in part),
// clipped to what is kept; trimming forgets what no utterance can need.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AudioBuffer } from '../../src/speech/audio-buffer.ts';

const ramp = (from: number, n: number) => Int16Array.from({ length: n }, (_, i) => from + i);

describe('AudioBuffer', () => {
  it('slices across whole and cut chunks, clipped to what is kept', () => {
    const b = new AudioBuffer(1000);
    for (let at = 0; at < 100; at += 10) b.append(ramp(at, 10));
    assert.deepEqual([...b.slice(5, 35)], [...ramp(5, 30)]);
    assert.deepEqual([...b.slice(20, 40)], [...ramp(20, 20)]);
    assert.deepEqual([...b.slice(95, 200)], [...ramp(95, 5)]);
    b.trim(42);
    assert.equal(b.first, 42);
    assert.deepEqual([...b.slice(0, 50)], [...ramp(42, 8)]);
  });

  it('keeps at most maxSamples', () => {
    const b = new AudioBuffer(25);
    for (let at = 0; at < 100; at += 10) b.append(ramp(at, 10));
    assert.equal(b.total, 100);
    assert.equal(b.first, 75);
    assert.deepEqual([...b.slice(0, 100)], [...ramp(75, 25)]);
  });
});
