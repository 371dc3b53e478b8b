// The optional out-of-scope detector (detector.ts): a logistic regression over meta-features of the
// local model's scores, trained at pack load from out-of-fold predictions. On a toy shop pack it
// must tell the shop's questions from foreign ones, train to the same model every time, stay off
// unless the pack asks for it, and decide by `thresholds.detector`.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledPack } from '../../src/intent/engine.ts';
import { AcceptDetector } from '../../src/intent/detector.ts';
import { normalize } from '../../src/intent/normalize.ts';
import { PackError, validatePack, type IntentPack } from '../../src/intent/pack.ts';

const D = { action: 'INFORM', next_state: 'DONE', response_id: 'R' };
const intent = (id: string, examples: string[]) => ({ id, examples: { 'en-IN': examples }, confirm: false, decisions: { initial: D } });

const shop = (detector?: { folds?: number; seed?: number }, examples = true): IntentPack =>
  validatePack({
    id: 'toy-shop',
    version: 1,
    languages: ['en-IN'],
    out_of_scope: {
      keywords: [],
      ...(examples
        ? {
            examples: [
              'what is the weather in pune today',
              'will it rain tomorrow',
              'who won the cricket match yesterday',
              'tell me a joke',
              'how do i cook biryani',
              'what is the capital of france',
              'play some music',
              'book a flight to delhi',
              'what is the score of india vs australia',
              'recommend a good movie',
              'how tall is mount everest',
              'set an alarm for 6 am',
              'translate hello to french',
              'what time is it in london',
              'who is the prime minister',
              'how to lose weight fast',
              'best pizza place near me',
              'what is bitcoin price',
              'send a message to my mom',
              'how many planets are there',
              'write a poem about rain',
              'what is the meaning of life',
              'convert 10 dollars to rupees',
              'how old is the universe',
            ],
          }
        : {}),
      ...(detector ? { detector } : {}),
    },
    fallback: { unknown: D, ambiguous: D, out_of_scope: D },
    intents: [
      intent('SHOP.DELIVERY', [
        'when will my mattress be delivered',
        'delivery time for my order',
        'how many days for delivery',
        'do you deliver to my pincode',
        'is delivery free',
        'track my delivery',
        'my order has not arrived yet',
        'can you deliver this week',
      ]),
      intent('SHOP.PRICE', [
        'what is the price of the mattress',
        'how much does the queen size cost',
        'price of king size mattress',
        'is there any discount',
        'what does the ortho mattress cost',
        'any offers on mattresses',
        'cost of single bed mattress',
        'tell me the price',
      ]),
      intent('SHOP.RETURN', [
        'i want to return my mattress',
        'how do i return the product',
        'what is your return policy',
        'can i get a refund',
        'return and refund process',
        'the mattress is uncomfortable i want to send it back',
        'trial period for returns',
        'refund my money',
      ]),
      intent('SHOP.WARRANTY', [
        'what is the warranty on the mattress',
        'how many years of warranty',
        'is there a warranty',
        'warranty claim for my mattress',
        'the mattress sagged is it covered by warranty',
        'warranty period details',
        'does the warranty cover stains',
        'how to claim warranty',
      ]),
      intent('SHOP.SIZE', [
        'what sizes do you have',
        'can i get a custom size mattress',
        'dimensions of queen size',
        'which size fits my bed',
        'do you make mattresses for a double bed',
        'size chart please',
        'mattress thickness options',
        'what is the length of king size',
      ]),
    ],
    responses: { R: { 'en-IN': { text: 'r', voice: 'r' } } },
  });

const inScope = [
  'mattress delivery date please',
  'how much is the queen mattress',
  'i need a refund for the mattress',
  'warranty of my mattress',
  'custom size of mattress possible',
];
const foreign = [
  'what is the weather like in mumbai',
  'who will win the football world cup',
  'how do i bake a chocolate cake',
  'recommend a song to listen to',
  'what is the population of china',
];
const p = (pack: CompiledPack, text: string) => pack.scoreLocal(normalize(text), false, [], 0)?.inScope ?? NaN;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('out-of-scope detector', () => {
  const pack = new CompiledPack(shop({}));

  it('is trained when the pack asks for it and has out-of-scope examples', () => {
    assert.ok(pack.detector);
    assert.equal(new CompiledPack(shop()).detector, null, 'off unless asked');
    assert.equal(new CompiledPack(shop({}, false)).detector, null, 'nothing to learn rejection from');
    assert.equal(new CompiledPack(shop({}), { detector: false }).detector, null);
  });

  it("tells the shop's questions from foreign ones", () => {
    const ins = inScope.map((t) => p(pack, t));
    const out = foreign.map((t) => p(pack, t));
    assert.ok(Math.min(...ins) > Math.max(...out), `in scope ${ins.map((x) => x.toFixed(2))} vs foreign ${out.map((x) => x.toFixed(2))}`);
    assert.ok(mean(ins) - mean(out) > 0.4);
    for (const t of inScope) assert.equal(pack.classify(normalize(t)).classification, 'KNOWN', t);
    for (const t of foreign) assert.notEqual(pack.classify(normalize(t)).classification, 'KNOWN', t);
  });

  it('answers the best intent of the local model when it accepts', () => {
    assert.equal(pack.classify(normalize('how much is the queen mattress')).intent?.id, 'SHOP.PRICE');
    assert.equal(pack.classify(normalize('i need a refund for the mattress')).intent?.id, 'SHOP.RETURN');
  });

  it('trains to the same detector every time (seeded folds)', () => {
    const again = new CompiledPack(shop({}));
    for (const t of [...inScope, ...foreign]) assert.equal(p(again, t), p(pack, t));
    const reseeded = new CompiledPack(shop({ seed: 9 }));
    assert.ok(
      [...inScope, ...foreign].some((t) => p(reseeded, t) !== p(pack, t)),
      'the seed drives the folds',
    );
  });

  it('decides by thresholds.detector, in place of accept and min_similarity', () => {
    const turn = normalize('mattress delivery date please');
    const scores = pack.scoreLocal(turn, false, [], 0);
    const at = (detector: number) => pack.decideLocal(scores, [], 0, { ...pack.thresholds, accept: 0.99, min_similarity: 0.99, detector }).classification;
    assert.equal(at(0), 'KNOWN');
    assert.notEqual(at(1), 'KNOWN');
    const strict = new CompiledPack(validatePack({ ...shop({}), thresholds: { detector: 1 } }));
    assert.notEqual(strict.local(turn, [], 0).classification, 'KNOWN');
  });

  it('leaves packs without it as they were', () => {
    const plain = new CompiledPack(shop());
    const scores = plain.scoreLocal(normalize('will it rain in delhi'), true);
    assert.equal(scores?.inScope, undefined);
  });

  it('is validated as part of the pack', () => {
    assert.throws(() => validatePack({ ...shop(), out_of_scope: { keywords: [], examples: ['x'], detector: { folds: 1 } } }), PackError);
    assert.throws(() => validatePack({ ...shop(), out_of_scope: { keywords: [], detector: { wrong: 1 } } }), PackError);
  });
});

describe('the detector model (logistic regression)', () => {
  it('separates two separable groups and is sure of points far from the boundary', () => {
    const xs = [...Array.from({ length: 20 }, (_, i) => [1 + i / 20, 0.5]), ...Array.from({ length: 20 }, (_, i) => [-1 - i / 20, 0.5])];
    const ys = xs.map((x) => (x[0]! > 0 ? 1 : 0));
    const m = AcceptDetector.fit(
      xs,
      ys,
      xs.map(() => 1),
      0.01,
    );
    assert.ok(m.score([1.5, 0.5]) > 0.9);
    assert.ok(m.score([-1.5, 0.5]) < 0.1);
    assert.ok(Math.abs(m.score([0, 0.5]) - 0.5) < 0.1, 'the boundary sits between the groups');
  });
  it('weighs examples: a heavier class moves the boundary away from it', () => {
    const xs = [...Array.from({ length: 10 }, (_, i) => [i / 10]), ...Array.from({ length: 10 }, (_, i) => [0.5 + i / 10])];
    const ys = xs.map((_, n) => (n >= 10 ? 1 : 0));
    const even = AcceptDetector.fit(
      xs,
      ys,
      xs.map(() => 1),
      0.01,
    );
    const heavy = AcceptDetector.fit(
      xs,
      ys,
      ys.map((y) => (y ? 5 : 1)),
      0.01,
    );
    assert.ok(heavy.score([0.7]) > even.score([0.7]));
  });
});
