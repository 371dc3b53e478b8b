// The deterministic matcher, the local model and the cascade over the demo pack; pack validation.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readPackFile } from '../../src/intent/packs.ts';
import { CompiledPack } from '../../src/intent/engine.ts';
import { normalize } from '../../src/intent/normalize.ts';
import { LexicalMatcher } from '../../src/intent/matcher.ts';
import { PackError, validatePack } from '../../src/intent/pack.ts';

const raw = readPackFile('config/packs/demo-banking-telecom.json');
const pack = new CompiledPack(raw);
const classify = (t: string) => pack.classify(normalize(t));

describe('lexical matcher', () => {
  const m = new LexicalMatcher({
    intents: [
      { id: 'A.CASH', examples: [], patterns: [], keywords: { dispensed: 2, 'kat gaye': 2 } },
      { id: 'B.NET', examples: ['net nahi chal raha'], patterns: ['^sim .*nahi'], keywords: { network: 2 } },
    ],
    outOfScope: ['weather'],
    derive: false,
  });
  it('scores weighted keywords and phrases', () =>
    assert.deepEqual(m.match(normalize('cash not dispensed, paise kat gaye').tokens).scores[0], { intent: 'A.CASH', score: 4 }));
  it('forgives one-letter misspellings of long keywords', () => assert.equal(m.match(normalize('netwrok down').tokens).scores[0]?.intent, 'B.NET'));
  it('matches normalized examples exactly, whatever the spelling', () => {
    const r = m.match(normalize('Net nhi chal rha!').tokens);
    assert.equal(r.exact, true);
    assert.equal(r.scores[0]?.intent, 'B.NET');
  });
  it('applies patterns and counts out-of-scope words', () => {
    assert.equal(m.match(normalize('sim detect nahi hota').tokens).scores[0]?.intent, 'B.NET');
    assert.equal(m.match(normalize('weather today').tokens).oosHits, 1);
  });
});

describe('the cascade on the demo pack', () => {
  const cases: [string, string][] = [
    ['ATM did not dispense cash but my account was debited', 'BANKING.ATM.CASH_NOT_DISPENSED'],
    ['paise nahi nikle par account se kat gaye', 'BANKING.ATM.CASH_NOT_DISPENSED'],
    ['एटीएम से पैसे नहीं निकले', 'BANKING.ATM.CASH_NOT_DISPENSED'],
    ['atm ne kam paise diye', 'BANKING.ATM.WRONG_AMOUNT'],
    ['mera card atm me fas gaya', 'BANKING.ATM.CARD_RETAINED'],
    ['ek transaction ke paise do baar kate', 'BANKING.TXN.DOUBLE_DEBIT'],
    ['refund kab tak aayega', 'BANKING.DISPUTE.REFUND_TIMELINE'],
    ['net nahi chal raha', 'TELECOM.DATA.SLOW_INTERNET'],
    ['netwrk nhi aa rha subah se', 'TELECOM.NETWORK.NO_SIGNAL'],
    ['call baar baar kat rahi hai', 'TELECOM.CALL.DROPS'],
    ['sim card not detected', 'TELECOM.SIM.NOT_DETECTED'],
    ['recharge kiya par balance nahi aaya', 'TELECOM.RECHARGE.NOT_REFLECTED'],
    ['mujhe number port karna hai', 'TELECOM.PORT.REQUEST'],
  ];
  for (const [text, want] of cases) {
    it(`${text} → ${want}`, () => {
      const r = classify(text);
      assert.equal(r.classification, 'KNOWN');
      assert.equal(r.intent?.id, want);
    });
  }
  it('an unseen paraphrase reaches the local model, which lists its candidates', () => {
    const r = classify('the cash machine kept my plastic');
    assert.ok(r.candidates.some((c) => c.source === 'local_model'));
    assert.equal(r.classifier_used, 'local_model');
  });
  it('out of scope and unknown turns carry no intent', () => {
    const oos = classify('who won the cricket match yesterday');
    assert.equal(oos.classification, 'OUT_OF_SCOPE');
    assert.equal(oos.intent, null);
    const gibberish = classify('qqq zzz');
    assert.notEqual(gibberish.classification, 'KNOWN');
    assert.equal(gibberish.intent, null);
  });
  it('out-of-scope vocabulary beside an intent keyword leaves the decision to the local model', () => {
    // "sim" is SIM.NOT_DETECTED's keyword and "naya sim" the pack's out-of-scope vocabulary.
    const turn = normalize('mera naya sim card chahiye');
    assert.ok(pack.matcher.match(turn.tokens, turn.text).scores[0]!.score >= pack.thresholds.deterministic);
    assert.ok(pack.matcher.match(turn.tokens, turn.text).oosHits > 0);
    assert.equal(pack.deterministic(turn).result, null);
    const r = pack.classify(turn);
    assert.equal(r.classifier_used, 'local_model');
    assert.notEqual(r.classification, 'KNOWN');
    // The same words without the out-of-scope phrase stay a rule's answer.
    assert.equal(pack.deterministic(normalize('mera sim card detect nahi ho raha')).result?.intent?.id, 'TELECOM.SIM.NOT_DETECTED');
  });
  it('a turn turned down that resembles no out-of-scope example is UNKNOWN (asked back), not OUT_OF_SCOPE (closed)', () => {
    assert.equal(raw.thresholds?.out_of_scope_similarity, 0.2);
    const off = new CompiledPack(validatePack({ ...structuredClone(raw), thresholds: { ...(raw.thresholds ?? {}), out_of_scope_similarity: 0 } }));
    for (const vague of ['kuch problem hai', 'help me with my issue', 'qwzx plorb vrentak sloomy']) {
      assert.equal(classify(vague).classification, 'UNKNOWN', vague);
      assert.equal(off.classify(normalize(vague)).classification, 'OUT_OF_SCOPE', vague);
    }
    // Turns like the pack's out-of-scope examples stay OUT_OF_SCOPE.
    for (const foreign of ['what is my account balance', 'mujhe home loan chahiye', 'aaj mausam kaisa hai'])
      assert.equal(classify(foreign).classification, 'OUT_OF_SCOPE', foreign);
  });
  it('trains fast enough to load at request time', () => assert.ok(pack.trainMs < 3000, `${pack.trainMs} ms`));
  it("a pack's thresholds.min_similarity turns down a local-model answer no example of its intent is that close to", () => {
    const turn = 'the cash machine kept my plastic card';
    const loose = classify(turn);
    assert.equal(loose.classifier_used, 'local_model');
    assert.equal(loose.classification, 'KNOWN');
    const strict = new CompiledPack(validatePack({ ...structuredClone(raw), thresholds: { ...(raw.thresholds ?? {}), min_similarity: 0.99 } }));
    const r = strict.classify(normalize(turn));
    assert.notEqual(r.classification, 'KNOWN');
    assert.equal(r.intent, null);
    // A turn that is one of the pack's own examples still passes.
    const own = raw.intents.find((i) => (i.examples['en-IN'] ?? []).length > 0)!;
    assert.equal(strict.classify(normalize(own.examples['en-IN']![0]!)).intent?.id, own.id);
  });
  it('decideLocal over scores computed once answers what the local stage answers under the same thresholds', () => {
    const turns = ['the cash machine kept my plastic', 'mera net bahut slow hai', 'what is the capital of peru', 'recharge nahi hua'].map((turn) => {
      const norm = normalize(turn);
      return { turn, norm, scores: pack.scoreLocal(norm, true) };
    });
    for (const accept of [0, 0.4, 0.9]) {
      for (const min_similarity of [0, 0.5, 0.95]) {
        const t = { ...pack.thresholds, accept, min_similarity };
        // One pack compiled per pair of thresholds (a compile is the slow part), asked every turn.
        const tuned = new CompiledPack(validatePack({ ...structuredClone(raw), thresholds: { ...(raw.thresholds ?? {}), accept, min_similarity } }));
        for (const { turn, norm, scores } of turns) {
          const want = tuned.local(norm, [], 0);
          const got = pack.decideLocal(scores, [], 0, t);
          assert.equal(got.classification, want.classification, `${turn} @ ${accept}/${min_similarity}`);
          assert.equal(got.intent?.id, want.intent?.id);
        }
      }
    }
  });
});

describe('augmented training at pack load', () => {
  it('adds seeded variants: two loads answer alike, and the matcher still learns from the pack alone', () => {
    const a = new CompiledPack(raw, { augment: { copies: 2, style: 'spelling' } });
    const b = new CompiledPack(raw, { augment: { copies: 2, style: 'spelling' } });
    for (const turn of ['paise nhi nikle atm se', 'netwrk nhi aa rha', 'blnce kitna h']) {
      assert.deepEqual(a.classify(normalize(turn)).candidates, b.classify(normalize(turn)).candidates);
    }
    assert.deepEqual(a.matcher.match(normalize('balance').tokens), pack.matcher.match(normalize('balance').tokens));
  });
});

describe('pack validation', () => {
  const clone = () => structuredClone(raw) as any;
  const fails = (mutate: (p: any) => void, path: RegExp) => {
    const p = clone();
    mutate(p);
    assert.throws(
      () => validatePack(p),
      (err: unknown) => err instanceof PackError && path.test(err.message),
    );
  };
  it('accepts the demo pack', () => assert.equal(validatePack(clone()).id, 'demo-banking-telecom'));
  it('names the first problem', () => {
    fails((p) => (p.intents[0].id = 'not.dotted.upper'), /intents\.0\.id/);
    fails((p) => (p.intents[1].id = p.intents[0].id), /duplicate intent id/);
    fails((p) => (p.intents[0].decisions.initial.response_id = 'NO.SUCH'), /response NO\.SUCH is not in responses/);
    fails((p) => delete p.intents[0].decisions.confirmed, /needs a confirmed decision/);
    fails((p) => (p.intents[0].patterns = ['(']), /patterns\.0: not a valid regular expression/);
    fails((p) => (p.intents[0].examples['ta-IN'] = ['x']), /language ta-IN is not one of the pack's languages/);
    fails((p) => (p.surprise = 1), /surprise: is not a known field/);
    fails((p) => (p.thresholds = { min_similarity: 2 }), /thresholds\.min_similarity/);
    fails((p) => delete p.responses['GEN.CLARIFY']['hi-IN'], /no wording for language hi-IN/);
  });
});
