// The telephone band's made-up upper band (src/speech/bandwidth.ts): what is folded, where it lands.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { foldsFor, foldUpperBand } from '../../src/speech/bandwidth.ts';
import { goertzelCoeff, goertzelPower } from '../../src/speech/tone.ts';

const sine = (hz: number, amplitude = 8000) => Int16Array.from({ length: 16000 }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / 16000)));
/** Amplitude of `hz` in the second half of `pcm` (past the filter's settling), from Goertzel's power. */
const amplitude = (pcm: Int16Array, hz: number) => {
  const half = pcm.subarray(pcm.length / 2);
  return (2 * Math.sqrt(goertzelPower(half, goertzelCoeff(hz, 16000)))) / half.length;
};

test('a 3.8 kHz tone is mirrored to 4.2 kHz at about half its amplitude, and kept itself', () => {
  const out = foldUpperBand(sine(3800));
  assert.ok(Math.abs(amplitude(out, 4200) - 4000) < 600, `mirror at 4.2 kHz: ${amplitude(out, 4200)}`);
  assert.ok(Math.abs(amplitude(out, 3800) - 8000) < 400, `the tone itself: ${amplitude(out, 3800)}`);
  assert.ok(amplitude(out, 5200) < 150, 'nothing where no tone is mirrored');
});

test('a voice band tone (800 Hz) is not mirrored: nothing at 7.2 kHz', () => {
  const out = foldUpperBand(sine(800));
  assert.ok(amplitude(out, 7200) < 150, `mirror of 800 Hz: ${amplitude(out, 7200)}`);
  assert.ok(Math.abs(amplitude(out, 800) - 8000) < 100);
});

test('a full-scale tone stays within 16 bits', () => {
  const out = foldUpperBand(sine(3500, 32767));
  assert.ok(out.every((s) => s >= -32768 && s <= 32767));
  assert.equal(out.length, 16000);
});

test('only an open request is folded, not the answer to a question', () => {
  assert.equal(foldsFor(undefined), true);
  assert.equal(foldsFor(null), true);
  for (const expect of ['yes_no', 'amount', 'digits', 'date']) assert.equal(foldsFor(expect), false, expect);
});
