// The language models' text (src/speech/corpus.ts): numbers said as an Indian English speaker says
// them, sentences brought to the recogniser's words, the apostrophes its dictionary spells, and the
// phrases of each expected answer.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { amountPhrases, corpusLine, digitPhrases, numberWords, withApostrophe, yesNoPhrases } from '../../src/speech/corpus.ts';
import { bareNumber, findAmount } from '../../src/intent/amounts.ts';

describe('corpus text', () => {
  it('says numbers as callers do', () => {
    assert.equal(numberWords(5000), 'five thousand');
    assert.equal(numberWords(1500), 'fifteen hundred');
    assert.equal(numberWords(250_000), 'two lakh fifty thousand');
    assert.equal(numberWords(12_345_678), 'one crore twenty three lakh forty five thousand six hundred seventy eight');
    assert.equal(numberWords(0), 'zero');
  });

  it("brings a sentence to the recogniser's words", () => {
    assert.equal(corpusLine('I tried to withdraw Rs. 5,000 from the ATM!'), 'i tried to withdraw rs five thousand from the atm');
    assert.equal(corpusLine('Call me on 9840950950'), 'call me on nine eight four zero nine five zero nine five zero');
    assert.equal(corpusLine("It's ‘broken’, isn’t it?"), "it's broken isn't it");
    assert.equal(corpusLine('एटीएम से पैसे नहीं निकले'), null); // another script: nothing the English model can say
  });

  it('spells the apostrophe the dictionary knows', () => {
    const dict = new Set(["didn't", "it's", 'dint']);
    const known = (w: string) => dict.has(w);
    assert.equal(withApostrophe('didnt', known), "didn't");
    assert.equal(withApostrophe('its', known), "it's");
    assert.equal(withApostrophe('dint', known), 'dint');
    assert.equal(withApostrophe('cash', known), 'cash');
  });

  it('gives phrases the intent engine reads as what was expected', () => {
    assert.ok(yesNoPhrases().includes('yes please') && yesNoPhrases().includes('no thanks'));
    // Every amount phrase is an amount the intent engine's parser reads back.
    for (const p of amountPhrases()) assert.notEqual(findAmount(p) ?? bareNumber(p), null, p);
    assert.ok(digitPhrases().every((p) => /^[a-z ]+$/.test(p)));
  });
});
