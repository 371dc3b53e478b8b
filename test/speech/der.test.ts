import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diarizationError } from '../../scripts/diarization/der.ts';

const close = (actual: number, expected: number) => assert.ok(Math.abs(actual - expected) < 1e-6, `${actual} ≠ ${expected}`);

test('DER counts confusion under the best speaker mapping, whatever the labels', () => {
  const reference = [
    { speaker: 'alice', start: 0, end: 10 },
    { speaker: 'bob', start: 10, end: 20 },
  ];
  const hypothesis = [
    { speaker: 1, start: 0, end: 12 },
    { speaker: 0, start: 12, end: 20 },
  ];
  const bare = diarizationError(reference, hypothesis, 0);
  close(bare.speech, 20);
  close(bare.confusion, 2);
  close(bare.der, 0.1);
  // The collar takes ±0.25 s around 0, 10 and 20 out of scoring (1 s of speech in all).
  const collared = diarizationError(reference, hypothesis, 0.25);
  close(collared.speech, 19);
  close(collared.confusion, 1.75);
});

test('DER counts missed speech and false alarms', () => {
  const reference = [{ speaker: 'a', start: 1, end: 5 }];
  const hypothesis = [
    { speaker: 'x', start: 2, end: 5 },
    { speaker: 'x', start: 6, end: 7 },
  ];
  const score = diarizationError(reference, hypothesis, 0);
  close(score.missed, 1);
  close(score.falseAlarm, 1);
  close(score.confusion, 0);
  close(score.der, 0.5);
  assert.equal(diarizationError([], [], 0.25).der, 0);
});

test('one hypothesis speaker maps to one reference speaker only', () => {
  const reference = [
    { speaker: 'a', start: 0, end: 4 },
    { speaker: 'b', start: 4, end: 6 },
  ];
  const score = diarizationError(reference, [{ speaker: 0, start: 0, end: 6 }], 0);
  close(score.confusion, 2);
});
