// Entities, dialogue acts and normalization: the hand-written parts (Indian amounts, Hindi number
// words, Hinglish relative dates, transliteration) and the library-backed ones (phones, chrono dates).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { normalize } from '../../src/intent/normalize.ts';
import { extractEntities } from '../../src/intent/entities.ts';
import { bareNumber, findAmount, readNumber } from '../../src/intent/amounts.ts';
import { dialogueAct, bareYesNo, ordinalChoice } from '../../src/intent/acts.ts';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { CHRONO_WORDS, findDate, mayHoldEnglishDate } from '../../src/intent/dates.ts';
import { DEMO_TURNS } from '../../scripts/eval-demo-pack.ts';

// 2025-03-10T20:00Z is Tuesday 11 March 2025, 01:30 in Asia/Kolkata (UTC would still say the 10th).
const NOW = Date.parse('2025-03-10T20:00:00Z');
const ents = (text: string) => extractEntities(normalize(text), NOW);

describe('amounts', () => {
  const cases: [string, number | null][] = [
    ['Rs. 2,50,000/- debited', 250000],
    ['₹1,00,000', 100000],
    ['INR 1.5 lakh', 150000],
    ['rs500 kat gaye', 500],
    ['500rs deducted', 500],
    ['do lakh pachas hazaar kat gaye', 250000],
    ['dhai hazaar rupaye', 2500],
    ['saadhe teen hazaar kat gaye', 3500],
    ['5k deducted', 5000],
    ['2 crore', 20000000],
    ['पाँच सौ रुपये कटे', 500],
    ['₹५००', 500],
    ['mere account se 2000 kat gaye', 2000],
    ['100,000 rupees', 100000],
    ['recharged with 599 but no data', 599],
    ['719 wala plan activate nahi hua', 719],
    ['199 ka pack nahi mila', 199],
    ['balance 1,234.50 hai', 1234.5],
    ['2 plan hai mere paas', null],
    ['84 days plan', null],
    ['84 din ka plan', null],
    ['my pin is 1234', null],
    ['call drop ho raha hai', null],
  ];
  for (const [text, want] of cases) {
    it(`${text} → ${want}`, () => assert.equal(ents(text).amount ?? null, want));
  }
  it('reads the number a short answer consists of, for a session that asked for an amount', () => {
    const cases: [string, number | null][] = [
      ['299', 299],
      ['299 ka tha', 299],
      ['it was 599', 599],
      ['dedh sau', 150],
      ['Rs. 1,499/-', 1499],
      ['२९९', 299],
      ['5k', 5000],
      ['2 baar 299', null],
      ['do', null],
      ['haan ji', null],
      ['net nahi chal raha', null],
      [`299 ${'bahut '.repeat(20)}`, null],
    ];
    for (const [text, want] of cases) assert.equal(bareNumber(normalize(text).plain), want, text);
  });
  it('reads number words with fractions and multipliers', () => {
    assert.deepEqual(readNumber(['sava', 'do', 'lakh'], 0), { value: 225000, used: 3 });
    assert.deepEqual(readNumber(['paanch', 'sau'], 0), { value: 500, used: 2 });
    assert.equal(findAmount('no number here'), null);
  });
});

describe('phones, e-mails and dates', () => {
  it('reads Indian mobile numbers in their common spellings, not account numbers', () => {
    for (const t of ['+91 98765 43210', '+919876543210', '09876543210', '98765-43210', 'mera number ९८७६५४३२१० hai']) {
      assert.equal(ents(t).phone, '+919876543210', t);
    }
    assert.equal(ents('account 123456789012 debited').phone, undefined);
  });
  it('reads a phone number said aloud, digit by digit, in English or Hindi, with double and triple', () => {
    for (const t of [
      'my number is nine eight seven six five four three two one zero',
      'nine eight seven six five four three two one oh',
      'mera number hai nau aath saat chhe paanch chaar teen do ek shunya',
      'नौ आठ सात छह पांच चार तीन दो एक शून्य',
      '98765 four three two one zero',
    ]) {
      assert.equal(ents(t).phone, '+919876543210', t);
    }
    assert.equal(ents('nine eight seven six five double four three two one').phone, '+919876544321');
    assert.equal(ents('triple nine eight seven six five four three two').phone, '+919998765432');
    // Short runs stay words: "do baar" is twice, not a digit.
    assert.deepEqual(ents('do baar paise kat gaye'), {});
    assert.equal(ents('one or two times').phone, undefined);
  });
  it('reads e-mails', () => assert.equal(ents('mail A.B@Example.com please').email, 'a.b@example.com'));
  it('resolves relative dates in Asia/Kolkata', () => {
    assert.equal(ents('aaj paise kate').date, '2025-03-11');
    assert.equal(ents('today').date, '2025-03-11');
    assert.equal(ents('yesterday the atm failed').date, '2025-03-10');
    assert.equal(ents('day after tomorrow').date, '2025-03-13');
    assert.equal(ents('on 5th March the atm failed').date, '2025-03-05');
  });
  it('resolves kal and parso by tense, the past when there is no cue', () => {
    assert.equal(ents('kal paise kat gaye').date, '2025-03-10');
    assert.equal(ents('kal tak recharge ho jayega?').date, '2025-03-12');
    assert.equal(ents('kal atm issue').date, '2025-03-10');
    assert.equal(ents('parso paise nahi nikle').date, '2025-03-09');
    assert.equal(ents('कल पैसे कट गए').date, '2025-03-10');
  });
  // NOW is Tuesday 11 March 2025 in Asia/Kolkata; chrono alone says 2025-03-17 for Monday and 2025-12-25 for Christmas.
  const dated: [string, string, string][] = [
    ['a weekday in a complaint is the last one', 'monday ko paise kat gaye', '2025-03-10'],
    ['a weekday in a complaint is the last one', 'friday ko atm se paise nahi nikle', '2025-03-07'],
    ['a weekday in a plan is the coming one', 'friday ko recharge karna hai', '2025-03-14'],
    ['a day without its year in a complaint is the last one', 'on 25th December the ATM failed', '2024-12-25'],
    ['a day without its year in a plan is the coming one', '25th december ko recharge karna hai', '2025-12-25'],
    ['a day without its year in a complaint is the last one', '20 march ko paise kat gaye', '2024-03-20'],
    ['a day with its year is that day', 'on 25 December 2025 the ATM failed', '2025-12-25'],
    ['Hindi weekdays, romanized', 'somvar ko paise kat gaye', '2025-03-10'],
    ['Hindi weekdays, in Devanagari', 'सोमवार को पैसे कटे', '2025-03-10'],
    ['Hindi weekdays, in a plan', 'somvar ko recharge karna hai', '2025-03-17'],
    ['N din pehle', 'do din pehle', '2025-03-09'],
    ['N din pehle, in Devanagari', 'दो दिन पहले पैसे कटे', '2025-03-09'],
    ['N hafte pehle', 'teen hafte pehle', '2025-02-18'],
    ['N din baad', '5 din baad', '2025-03-16'],
    ['N din mein, in a future turn', '2 din mein paise wapas aayenge', '2025-03-13'],
  ];
  for (const [why, text, want] of dated) it(`${why}: ${text} → ${want}`, () => assert.equal(ents(text).date, want));
  it('in a past turn "2 din mein" is a span, not a date; the amount is still read', () => {
    assert.deepEqual(ents('mere 2 din me 500 kate'), { amount: 500 });
  });
  it('omits what is absent', () => assert.deepEqual(ents('net nahi chal raha'), {}));
  it('reads no date from tokens named like Object.prototype members', () => {
    // normalize() lower-cases and respells them today; findDate must not depend on that.
    for (const w of ['constructor', 'toString', 'valueOf', '__proto__', 'hasOwnProperty']) assert.equal(findDate(w, [w], NOW), null, w);
  });
});

describe('normalization and dialogue acts', () => {
  it('romanizes Devanagari and folds Hinglish spellings onto one form', () => {
    assert.equal(normalize('पैसे नहीं निकले').text, normalize('pese nhi nikle').text);
    assert.equal(normalize('नहीं').text, normalize('nahin').text);
  });
  it('reads a pick among offered options, and only a short one', () => {
    const cases: [string, number | null][] = [
      ['the second one', 1],
      ['pehla wala', 0],
      ['option 2', 1],
      ['last', -1],
      ['दूसरा वाला', 1],
      ['teesra option', 2],
      ['the first one please', 0],
      ['one', null],
      ['1 and 2', null],
      ['net nahi chal raha', null],
      ['the second atm was fine', null],
    ];
    for (const [text, want] of cases) assert.equal(ordinalChoice(normalize(text).tokens), want, text);
  });
  it('bare yes/no in English, Hindi and Hinglish', () => {
    for (const t of ['haan', 'haan ji', 'ji', 'theek hai', 'yes please', 'okay', 'हाँ जी', 'bilkul', 'yes go ahead'])
      assert.equal(bareYesNo(normalize(t).tokens), 'yes', t);
    for (const t of ['nahi', 'no', 'nahi chahiye', 'नहीं', 'no thanks', 'mat karo']) assert.equal(bareYesNo(normalize(t).tokens), 'no', t);
    for (const t of ['paise nahi nikle', 'yes my atm did not dispense', 'haan paise kat gaye']) assert.equal(bareYesNo(normalize(t).tokens), null, t);
  });
  it('tags the other acts', () => {
    const act = (t: string) => dialogueAct(normalize(t), t).act;
    assert.equal(act('hello'), 'GREETING');
    assert.equal(act('namaste ji'), 'GREETING');
    assert.equal(act('thank you so much'), 'THANKS');
    assert.equal(act('shukriya'), 'THANKS');
    assert.equal(act('bye'), 'GOODBYE');
    assert.equal(act('refund kab aayega?'), 'QUESTION');
    assert.equal(act('net nahi chal raha'), 'COMPLAINT');
    assert.equal(act('please block my card'), 'REQUEST');
    assert.equal(act('my name is Ravi'), 'STATEMENT');
  });
});

describe('chrono-node is asked only about turns it could find a date in', () => {
  const load = createRequire(import.meta.url);
  it("CHRONO_WORDS holds every word of chrono's English weekday, month and time-unit dictionaries", () => {
    const c = load(new URL('../../node_modules/chrono-node/dist/cjs/locales/en/constants.js', import.meta.url).pathname);
    for (const dictionary of [c.WEEKDAY_DICTIONARY, c.MONTH_DICTIONARY, c.TIME_UNIT_DICTIONARY]) {
      for (const key of Object.keys(dictionary)) assert.ok(CHRONO_WORDS.has(key.replace(/\.$/, '')), key);
    }
  });
  it("chrono finds nothing in any turn of the demo pack's that the gate turns away, and the gate turns most away", () => {
    const chrono = load('chrono-node');
    const texts = [...readFileSync(DEMO_TURNS.dev, 'utf8').split('\n'), ...readFileSync(DEMO_TURNS.heldout, 'utf8').split('\n')]
      .map((l) => l.split('\t')[0]!.toLowerCase())
      .filter(Boolean);
    const away = texts.filter((t) => !mayHoldEnglishDate(t));
    for (const t of away) assert.deepEqual(chrono.en.GB.parse(t, { instant: new Date(NOW) }), [], t);
    assert.ok(away.length > texts.length / 2, `${away.length} of ${texts.length}`);
    for (const t of ['on 5th of may', 'last friday', 'two weeks ago', 'day after tomorrow', 'this morning', 'end of the month'])
      assert.ok(mayHoldEnglishDate(t), t);
  });
});
