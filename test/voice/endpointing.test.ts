// The endpointing of a call's turns, through the simulator over real sockets: `endpointing_ms.min` of
// silence ends the callee's turn, `max` while digits are expected: after the pack asked for an
// amount (an ASK whose intent requires one), or once the callee keyed DTMF since the agent spoke.
// A 1 s pause inside "four five six seven … eight nine" is one turn there, two after a yes/no question.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ended, waitForCall } from './helpers.ts';
import { simulatedVoice } from './simulated.ts';

const DIGITS = [{ say: 'four five six seven' }, { silence_ms: 1000 }, { say: 'eight nine' }, { silence_ms: 2000 }, { hangup: true as const }];

describe('endpointing: min ends a turn, max while digits are expected', () => {
  const v = simulatedVoice([
    // After the greeting: a recharge not reflected (the pack asks for the amount), then digits with a 1 s pause.
    {
      to: '+919800000022',
      answer: 'answer',
      ring_ms: 100,
      steps: [{ wait_agent: 'done', ms: 200 }, { say: 'my recharge is not reflected' }, { wait_agent: 'done', ms: 200 }, ...DIGITS],
    },
    // After the opening (the pack's yes/no question), the same digits.
    { to: '+919800000023', answer: 'answer', ring_ms: 100, steps: [{ wait_agent: 'done', ms: 200 }, ...DIGITS] },
    // With nothing asked: a DTMF key, then the same digits.
    { to: '+919800000024', answer: 'answer', ring_ms: 100, steps: [{ silence_ms: 300 }, { dtmf: '1' }, ...DIGITS] },
  ]);
  const calleeTurns = (c: { transcript: { role: string; text: string; dtmf?: string; start: number; end: number }[] }, from: number) =>
    c.transcript.slice(from).filter((t) => t.role === 'callee' && t.dtmf === undefined);

  it('after the pack asks for an amount, a 1 s pause inside the digits does not end the turn', async () => {
    v.stt.say('my recharge is not reflected', 'four five six seven eight nine');
    const before = v.stt.heard.length;
    const res = await v.dial('+919800000022');
    const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 40_000);
    assert.equal(c.transcript[2]?.response_id, 'TELECOM.RECHARGE.ASK_AMOUNT', JSON.stringify(c.transcript));
    assert.equal(v.stt.heard.length - before, 2, 'two utterances recognised: the complaint, then the digits as one');
    const digits = calleeTurns(c, 3);
    assert.deepEqual(
      digits.map((t) => t.text),
      ['four five six seven eight nine'],
    );
    assert.ok(digits[0]!.end - digits[0]!.start >= 3, `the utterance spans the pause: ${JSON.stringify(digits[0])}`);
  });

  it('after a yes/no question, the same pause ends the turn', async () => {
    v.stt.say('four five six seven', 'eight nine');
    const before = v.stt.heard.length;
    const res = await v.dial('+919800000023', { first_message: { response_id: 'BANKING.DISPUTE.ASK_RAISE' } });
    const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 40_000);
    assert.equal(c.transcript[0]?.response_id, 'BANKING.DISPUTE.ASK_RAISE', JSON.stringify(c.transcript));
    assert.equal(v.stt.heard.length - before, 2, 'two utterances recognised');
    assert.deepEqual(
      calleeTurns(c, 1).map((t) => t.text),
      ['four five six seven', 'eight nine'],
    );
  });

  it('after a DTMF key, the same pause does not end the turn either', async () => {
    v.stt.say('four five six seven eight nine');
    const before = v.stt.heard.length;
    const res = await v.dial('+919800000024', { first_message: { mode: 'wait_for_callee' } });
    const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 40_000);
    assert.equal(c.transcript[0]?.dtmf, '1', JSON.stringify(c.transcript));
    assert.equal(v.stt.heard.length - before, 1, 'one utterance recognised');
    assert.deepEqual(
      calleeTurns(c, 0).map((t) => t.text),
      ['four five six seven eight nine'],
    );
  });

  it('refuses endpointing_ms.max below min', async () => {
    const res = await v.dial('+919800000099', { turn: { endpointing_ms: { min: 900, max: 800 } } });
    assert.deepEqual([res.status, res.body.error.code, res.body.error.param], [400, 'invalid_request', 'turn.endpointing_ms.max']);
  });
});
