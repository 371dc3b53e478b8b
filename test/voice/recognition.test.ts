// What a call's agent tells the recogniser (src/voice/recognition.ts), read from the demo pack's own
// metadata: a yes/no after the question that confirms a dispute, an amount after the ASK for one,
// nothing after an open question; the pack's domain named by its content.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CONFIG_DIR } from '../../src/config.ts';
import type { IntentPack } from '../../src/intent/pack.ts';
import { expectationAfter, speechDomain } from '../../src/voice/recognition.ts';

const pack = JSON.parse(readFileSync(`${CONFIG_DIR}packs/demo-banking-telecom.json`, 'utf8')) as IntentPack;

describe('what the agent expects to hear', () => {
  it('reads the shape of the answer from the pack', () => {
    assert.equal(expectationAfter(pack, 'BANKING.DISPUTE.ASK_RAISE'), 'yes_no');
    assert.equal(expectationAfter(pack, 'TELECOM.COMPLAINT.ASK'), 'yes_no');
    assert.equal(expectationAfter(pack, 'TELECOM.RECHARGE.ASK_AMOUNT'), 'amount');
    assert.equal(expectationAfter(pack, 'GEN.GREETING'), null);
    assert.equal(expectationAfter(pack, 'GEN.CLARIFY'), null);
    assert.equal(expectationAfter(pack, null), null);
  });

  it("names a pack's domain by its content: another example is another domain", () => {
    const a = speechDomain(pack);
    assert.equal(speechDomain(structuredClone(pack)).key, a.key);
    const changed = structuredClone(pack);
    changed.intents[0]!.examples['en-IN']!.push('the cash machine ate my money');
    const b = speechDomain(changed);
    assert.notEqual(b.key, a.key);
    assert.ok(b.sentences.includes('the cash machine ate my money'));
    assert.ok(
      a.sentences.some((s) => /paise nahi nikle/.test(s)),
      'romanized Hindi examples are part of it',
    );
  });
});
