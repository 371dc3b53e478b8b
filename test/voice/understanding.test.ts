// Which reading of a callee's turn the agent answers (src/voice/understanding.ts): the first of the
// recogniser's readings it understands for what it asked, else none (the first best is answered).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileDemoPack } from '../../scripts/eval-demo-pack.ts';
import { firstUnderstood } from '../../src/voice/understanding.ts';

describe('the agent answers the first reading it understands', () => {
  const pack = compileDemoPack();

  it('after a yes/no question: the first yes or no, past near misses the recogniser put first', () => {
    assert.equal(firstUnderstood(pack, 'yes_no', ['check radio', 'sure please do', 'no']), 'sure please do');
    assert.equal(firstUnderstood(pack, 'yes_no', ['mere account', 'no no']), 'no no');
  });

  it('after an amount question: the first reading holding an amount', () => {
    assert.equal(firstUnderstood(pack, 'amount', ['it was for the', 'it was four thousand five hundred']), 'it was four thousand five hundred');
  });

  it('a request the pack knows is understood whatever was asked, so a new request is not read as a yes or a no', () => {
    const request = 'the atm did not give cash but money was debited';
    assert.equal(firstUnderstood(pack, undefined, ['my me with deb', request]), request);
    assert.equal(firstUnderstood(pack, 'yes_no', ['uh the', request, 'no']), request);
  });

  it('nothing understood: null (the first best is answered)', () => {
    assert.equal(firstUnderstood(pack, 'yes_no', ['uh the', 'hmm', '']), null);
    assert.equal(firstUnderstood(pack, undefined, []), null);
  });
});
