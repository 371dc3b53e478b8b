// Romanized Hindi to Devanagari for the offline Hindi voice.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isRomanized, romanizedHindiToDevanagari } from '../../src/speech/transliterate.ts';

describe('romanizedHindiToDevanagari', () => {
  it('writes informal romanized Hindi in Devanagari: lower-cased, a word-final a long', () => {
    assert.equal(romanizedHindiToDevanagari('Namaste, kitna hai?'), 'नमस्ते, कित्ना है?');
    assert.equal(romanizedHindiToDevanagari('dhanyavaad'), 'धन्यवाद्');
  });
  it('leaves Devanagari, mixed script and text without letters alone', () => {
    for (const t of ['नमस्ते', 'नमस्ते OK', '1234, 56']) assert.equal(romanizedHindiToDevanagari(t), t);
    assert.equal(isRomanized('नमस्ते OK'), false);
  });
});
