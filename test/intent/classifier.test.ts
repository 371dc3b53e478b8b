// The local model on its own: deterministic training, generalization to unseen wording, a
// temperature that changes confidence and not the ranking, the example memory of small packs and
// class-balanced training; and the matcher's one-edit test.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { NgramClassifier, type Example } from '../../src/intent/classifier.ts';
import { normalize, withinOneEdit } from '../../src/intent/normalize.ts';

const examples: Example[] = [
  ...['what is my balance', 'how much money do i have', 'show my account balance', 'balance check karo', 'kitna balance hai'].map((t) => ({ tokens: normalize(t).tokens, label: 'BALANCE' })),
  ...['block my card', 'my card was stolen', 'freeze the debit card', 'card kho gaya block karo', 'i lost my card'].map((t) => ({ tokens: normalize(t).tokens, label: 'BLOCK' })),
  ...['send money to ravi', 'transfer 500 rupees', 'pay my friend', 'paise bhejo', 'make a transfer to my sister'].map((t) => ({ tokens: normalize(t).tokens, label: 'TRANSFER' })),
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
    ['dispence', 'dispense', true], ['netwrok', 'network', true], ['recharge', 'rechargee', true], ['balance', 'balanc', true],
    ['balance', 'balance', true], ['network', 'netvork', true], ['account', 'acocunt', true], ['account', 'cacount', true], ['account', 'aoccunt', false], ['kitten', 'sitting', false], ['abcd', 'badc', false],
  ];
  for (const [a, b, want] of cases) it(`${a} ~ ${b}: ${want}`, () => assert.equal(withinOneEdit(a, b) && withinOneEdit(b, a), want));
});
