// A call's speech domain (src/voice/expectations.ts): the pack's sentences the offline recogniser
// builds its language models from, named by their content so a new version is built anew.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CONFIG_DIR } from '../../src/config.ts';
import type { IntentPack } from '../../src/intent/pack.ts';
import { speechDomain } from '../../src/voice/expectations.ts';

const pack = JSON.parse(readFileSync(`${CONFIG_DIR}packs/demo-banking-telecom.json`, 'utf8')) as IntentPack;

describe("a pack's speech domain", () => {
  it("names a pack's domain by its content: another example is another domain", () => {
    const a = speechDomain(pack);
    assert.equal(speechDomain(structuredClone(pack)).key, a.key);
    const changed = structuredClone(pack);
    changed.intents[0]!.examples['en-IN']!.push('the cash machine ate my money');
    const b = speechDomain(changed);
    assert.notEqual(b.key, a.key);
    assert.ok(b.sentences.includes('the cash machine ate my money'));
    assert.ok(
      a.sentences.some((s: string) => /paise nahi nikle/.test(s)),
      'romanized Hindi examples are part of it',
    );
  });
});
