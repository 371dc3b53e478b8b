// What a call's listener expects after the agent's words, from the demo pack: its confirmation ASK
// expects a yes or a no, its ASK for a missing amount an amount, anything else in-domain speech
// (the pack's keywords, heaviest first); the agent's words are always the prompt. The intent agent
// keeps it per reply (opening, turns), the LLM agent from its last reply.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readPackFile } from '../../src/intent/packs.ts';
import { expectationOf, listeningContext } from '../../src/voice/expectations.ts';
import { KEY_TERMS_MAX } from '../../src/shared/recognition-context.ts';

const pack = readPackFile('config/packs/demo-banking-telecom.json');

describe("a call's listening context", () => {
  it("the pack's ASKs: a confirmation expects yes/no, a missing amount an amount, a plain reply nothing in particular", () => {
    assert.equal(expectationOf(pack, 'BANKING.DISPUTE.ASK_RAISE'), 'yes_no');
    assert.equal(expectationOf(pack, 'BANKING.ATM.WRONG_AMOUNT.ASK'), 'yes_no');
    assert.equal(expectationOf(pack, 'TELECOM.RECHARGE.ASK_AMOUNT'), 'amount');
    assert.equal(expectationOf(pack, 'GEN.GREETING'), null);
    assert.equal(expectationOf(pack, 'BANKING.DISPUTE.CREATED'), null);
  });

  it('a yes/no question: the question as the prompt, yes/no words as key terms', () => {
    const said = 'Sorry about that. Shall I raise a dispute for the debited amount?';
    const c = listeningContext(pack, 'BANKING.DISPUTE.ASK_RAISE', said)!;
    assert.equal(c.prompt, said);
    assert.equal(c.expect, 'yes_no');
    for (const w of ['yes', 'no', 'haan', 'nahi']) assert.ok(c.keyTerms!.includes(w), w);
  });

  it('an amount asked: amount words', () => {
    const c = listeningContext(pack, 'TELECOM.RECHARGE.ASK_AMOUNT', 'How much was the recharge?')!;
    assert.equal(c.expect, 'amount');
    for (const w of ['rupees', 'thousand', 'hundred']) assert.ok(c.keyTerms!.includes(w), w);
  });

  it("anything else: the pack's keywords with a positive weight, heaviest first, at most a request's worth", () => {
    const c = listeningContext(pack, 'GEN.GREETING', 'Hello! How can I help you today?')!;
    assert.equal(c.expect, undefined);
    assert.equal(c.prompt, 'Hello! How can I help you today?');
    const weights = new Map<string, number>();
    for (const i of pack.intents) for (const [w, n] of Object.entries(i.keywords ?? {})) weights.set(w, Math.max(weights.get(w) ?? 0, n));
    assert.ok(c.keyTerms!.length > 0 && c.keyTerms!.length <= KEY_TERMS_MAX);
    assert.ok(c.keyTerms!.every((t) => (weights.get(t) ?? 0) > 0));
    const ws = c.keyTerms!.map((t) => weights.get(t)!);
    assert.deepEqual(
      ws,
      [...ws].sort((a, b) => b - a),
      'heaviest first',
    );
    assert.ok(c.keyTerms!.includes('not dispensed'), 'a phrase kept whole');
  });

  it('no pack (an LLM agent, a wording of its own): only the prompt', () => {
    assert.deepEqual(listeningContext(null, null, 'How can I help?'), { prompt: 'How can I help?' });
  });
});
