// The local model on its own: deterministic training, generalization to unseen wording, a
// temperature that changes confidence and not the ranking, the example memory of small packs and
// class-balanced training; and the matcher's one-edit test.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { NgramClassifier, mulberry32, type Example } from '../../src/intent/classifier.ts';
import { augment, dropVowels, misspelt, noisy, typo, variant } from '../../src/intent/augment.ts';
import { normalize, withinOneEdit } from '../../src/intent/normalize.ts';

const examples: Example[] = [
  ...['what is my balance', 'how much money do i have', 'show my account balance', 'balance check karo', 'kitna balance hai'].map((t) => ({
    tokens: normalize(t).tokens,
    label: 'BALANCE',
  })),
  ...['block my card', 'my card was stolen', 'freeze the debit card', 'card kho gaya block karo', 'i lost my card'].map((t) => ({
    tokens: normalize(t).tokens,
    label: 'BLOCK',
  })),
  ...['send money to ravi', 'transfer 500 rupees', 'pay my friend', 'paise bhejo', 'make a transfer to my sister'].map((t) => ({
    tokens: normalize(t).tokens,
    label: 'TRANSFER',
  })),
];
const top = (m: NgramClassifier, text: string) => m.predict(normalize(text).tokens, 1)[0]!;

describe('local model', () => {
  const model = NgramClassifier.train(examples);
  it('answers unseen wording of a known intent', () => {
    assert.equal(top(model, 'whats the balance in my account').label, 'BALANCE');
    assert.equal(top(model, 'please block my stolen card').label, 'BLOCK');
    assert.equal(top(model, 'bhai ko paise transfer karo').label, 'TRANSFER');
  });
  it('trains to the same probabilities every time (seeded)', () => {
    const again = NgramClassifier.train(examples);
    assert.deepEqual(again.predict(normalize('card block').tokens), model.predict(normalize('card block').tokens));
  });
  it('a temperature changes how sure it is, not what it answers', () => {
    const sharp = NgramClassifier.train(examples);
    sharp.setTemperature(0.2);
    const [a, b] = [top(model, 'lost card'), top(sharp, 'lost card')];
    assert.equal(a.label, b.label);
    assert.ok(b.prob > a.prob);
  });
});

describe('example memory (small packs)', () => {
  const model = NgramClassifier.train(examples);
  it('knows how close a turn is to what it was taught', () => {
    assert.ok(model.hasMemory());
    const [taught] = model.predict(normalize('block my card').tokens, 1);
    const [paraphrase] = model.predict(normalize('card kho gaya').tokens, 1);
    const [stranger] = model.predict(normalize('what is the weather in pune').tokens, 1);
    assert.ok(taught!.similarity! > 0.99);
    assert.ok(stranger!.similarity! < 0.7 && stranger!.similarity! < paraphrase!.similarity! - 0.15);
  });
  it('a nearest-neighbour vote moves the probabilities towards the nearest example', () => {
    const knn = NgramClassifier.train(examples);
    knn.setNeighbourMix({ weight: 1, temperature: 0.05 });
    const text = normalize('card kho gaya').tokens;
    assert.equal(knn.predict(text, 1)[0]!.label, 'BLOCK');
    assert.ok(knn.predict(text, 1)[0]!.prob > model.predict(text, 1)[0]!.prob);
  });
  it('is not kept when labels have many examples', () => {
    assert.equal(NgramClassifier.train(examples, { memory: false }).hasMemory(), false);
  });
});

describe('class-balanced training', () => {
  const chatter = Array.from({ length: 60 }, (_, i) => ({ tokens: normalize(`tell me a story number ${i} about a card game`).tokens, label: 'OTHER' }));
  it('a big class no longer drowns intents of five examples', () => {
    const plain = NgramClassifier.train([...examples, ...chatter]);
    const balanced = NgramClassifier.train([...examples, ...chatter], { balance: true });
    const p = (m: NgramClassifier) => m.predict(normalize('card block karo').tokens).find((s) => s.label === 'BLOCK')!.prob;
    assert.ok(p(balanced) > p(plain));
  });
});

describe('one-edit test', () => {
  const cases: [string, string, boolean][] = [
    ['dispence', 'dispense', true],
    ['netwrok', 'network', true],
    ['recharge', 'rechargee', true],
    ['balance', 'balanc', true],
    ['balance', 'balance', true],
    ['network', 'netvork', true],
    ['account', 'acocunt', true],
    ['account', 'cacount', true],
    ['account', 'aoccunt', false],
    ['kitten', 'sitting', false],
    ['abcd', 'badc', false],
  ];
  for (const [a, b, want] of cases) it(`${a} ~ ${b}: ${want}`, () => assert.equal(withinOneEdit(a, b) && withinOneEdit(b, a), want));
});

describe('augmentation (noisy variants of training examples)', () => {
  const texts = ['Can you please deliver on my pincode', 'How many days for delivery', 'What is the price of the ergo mattress'];
  it('gives the same variants for the same seed, other ones for another seed', () => {
    const a = augment(texts, { copies: 3, seed: 5 });
    assert.deepEqual(augment(texts, { copies: 3, seed: 5 }), a);
    assert.notDeepEqual(augment(texts, { copies: 3, seed: 6 }), a);
    assert.deepEqual(augment(texts, { copies: 2, seed: 5, style: 'spelling' }), augment(texts, { copies: 2, seed: 5, style: 'spelling' }));
  });
  it('never repeats an original or another variant of it, and adds at most `copies` per text', () => {
    const out = augment(['ok', 'EMI', ...texts], { copies: 4, seed: 3 });
    assert.ok(out.length <= 4 * 5);
    assert.ok(!out.includes('emi') && !out.includes('ok'));
    assert.equal(new Set(out).size, out.length);
    assert.deepEqual(augment(texts, { copies: 0 }), []);
  });
  it('drops inner vowels the way people text, and leaves short words alone', () => {
    assert.equal(dropVowels('please'), 'pls');
    assert.equal(dropVowels('many'), 'mny');
    assert.equal(dropVowels('how'), 'hw');
    assert.equal(dropVowels('delivery'), 'dlvry');
    assert.equal(dropVowels('to'), 'to');
  });
  it('makes one typo: the word changes by one edit and keeps its first letter', () => {
    const rand = mulberry32(9);
    for (let i = 0; i < 200; i++) {
      const t = typo('delivery', rand);
      assert.notEqual(t, 'delivery');
      assert.equal(t[0], 'd');
      assert.ok(withinOneEdit(t, 'delivery'), t);
    }
    assert.equal(typo('ok', rand), 'ok');
  });
  it('spelling variants keep every word, in order', () => {
    const rand = mulberry32(2);
    for (let i = 0; i < 50; i++) {
      const v = misspelt('How many days for delivery', rand).split(' ');
      assert.equal(v.length, 5);
      assert.equal(v[0]![0], 'h');
      assert.equal(v[4]![0], 'd');
    }
  });
  it('word variants mostly keep what the text is about; the evaluation noise cuts anything', () => {
    const rand = mulberry32(4);
    const about = (v: string) => v.split(' ').some((w) => w[0] === 'd' || w[0] === 'p');
    const variants = Array.from({ length: 200 }, () => variant('can you deliver to my pincode', rand));
    const noise = Array.from({ length: 200 }, () => noisy('can you deliver to my pincode', rand));
    assert.ok(variants.every((v) => v.length > 0) && noise.every((v) => v.length > 0));
    assert.ok(variants.filter(about).length > 190);
    assert.ok(noise.filter(about).length < variants.filter(about).length);
  });
  it('spelling variants teach the model misspelt turns it otherwise misses', () => {
    const small: Example[] = [
      ...['when will my order be delivered', 'delivery date of my order'].map((t) => ({ tokens: normalize(t).tokens, label: 'DELIVERY' })),
      ...['what is the warranty period', 'warranty on the mattress'].map((t) => ({ tokens: normalize(t).tokens, label: 'WARRANTY' })),
    ];
    const variants = (label: string, list: string[]) =>
      augment(list, { copies: 8, seed: 1, style: 'spelling' }).map((t) => ({ tokens: normalize(t).tokens, label, synthetic: true }));
    const more = [
      ...small,
      ...variants('DELIVERY', ['when will my order be delivered', 'delivery date of my order']),
      ...variants('WARRANTY', ['what is the warranty period', 'warranty on the mattress']),
    ];
    const p = (m: NgramClassifier) => m.predict(normalize('dlvry dte').tokens).find((s) => s.label === 'DELIVERY')!.prob;
    assert.ok(p(NgramClassifier.train(more)) > p(NgramClassifier.train(small)));
  });
  it('the example memory keeps only taught examples: a synthetic twin does not raise the similarity', () => {
    const taught: Example[] = examples;
    const twin = { tokens: normalize('wthr in pune').tokens, label: 'BALANCE', synthetic: true };
    const plain = NgramClassifier.train(taught, { memory: true });
    const withTwin = NgramClassifier.train([...taught, twin], { memory: true });
    const sim = (m: NgramClassifier) => m.predict(normalize('wthr in pune').tokens).find((s) => s.label === 'BALANCE')!.similarity!;
    assert.ok(sim(withTwin) < 0.9);
    const counted = NgramClassifier.train([...taught, { ...twin, synthetic: false }], { memory: true });
    assert.ok(sim(counted) > 0.99);
    assert.ok(Math.abs(sim(withTwin) - sim(plain)) < 0.2);
  });
});
