// The demo pack on hand-written turns it was not written from (test/intent/fixtures/README.md):
// the dev set it is tuned on, scored as actions. The held-out set is reported by
// `npm run eval:intent` only, so no test tunes the pack towards it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileDemoPack, DEMO_TURNS, readTurns } from '../../scripts/eval-demo-pack.ts';
import { OUT_OF_SCOPE, scoreTurns, summarize } from '../../src/intent/evaluate.ts';

describe('the demo pack on its dev turns', () => {
  const turns = readTurns(DEMO_TURNS.dev);
  const scores = scoreTurns(compileDemoPack(), turns);
  const s = summarize(scores);

  it('covers every intent of the pack in English, Hindi and Hinglish, and both kinds of out-of-scope turn', () => {
    const pack = compileDemoPack();
    for (const id of pack.intents.keys()) {
      for (const style of ['en', 'hi', 'hinglish'])
        assert.ok(
          turns.some((t) => t.gold === id && t.style.startsWith(style)),
          `${id} ${style}`,
        );
    }
    assert.ok(turns.filter((t) => t.gold === OUT_OF_SCOPE && t.style.startsWith('near')).length >= 40);
    assert.ok(turns.filter((t) => t.gold === OUT_OF_SCOPE && t.style.startsWith('off')).length >= 20);
  });
  it('answers nine turns in ten right and acts on the wrong complaint at most once in fifty', () => {
    assert.ok(s.accuracy >= 0.9, `accuracy ${s.accuracy}`);
    assert.ok(
      s.wrong_action_rate <= 0.02,
      `wrong actions ${s.wrong_action_rate}: ${scores
        .filter((x) => x.outcome === 'wrong')
        .map((x) => x.text)
        .join(' | ')}`,
    );
  });
  it('is as good in Hindi and Hinglish as in English, and on carelessly typed turns', () => {
    for (const g of ['en', 'hi', 'hinglish', 'noisy']) {
      const { right, turns: n } = s.by_group[g]!;
      assert.ok(right / n >= 0.85, `${g}: ${right}/${n}`);
    }
  });
  it('does not act on banking or telecom asks it does not cover (balances, loans, new SIMs...), nor on other domains', () => {
    for (const g of ['near', 'off']) {
      const { right, turns: n } = s.by_group[g]!;
      assert.ok(right / n >= 0.9, `${g}: ${right}/${n}`);
    }
  });
});
