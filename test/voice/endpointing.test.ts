// The endpointing of a call's turns, through the simulator over real sockets: `endpointing_ms.min` of
// silence ends the callee's turn, `max` while digits are expected: after the pack asked for an
// amount (an ASK whose intent requires one), or once the callee keyed DTMF since the agent spoke.
// A 1 s pause inside "four five six seven … eight nine" is one turn there, two after a yes/no question.
// Keys are the agent's turns too: the keys up to # or up to the same pause.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ended, waitForCall } from './helpers.ts';
import { simulatedVoice } from './simulated.ts';
import type { CalleeScript } from '../../src/config.ts';

const DIGITS = [{ say: 'four five six seven' }, { silence_ms: 1000 }, { say: 'eight nine' }, { silence_ms: 2000 }, { hangup: true as const }];

/** After the greeting: a recharge not reflected, so the pack asks for the amount. */
const ASKED_AMOUNT = [{ wait_agent: 'done' as const, ms: 200 }, { say: 'my recharge is not reflected' }, { wait_agent: 'done' as const, ms: 200 }];
/** A callee of the suite: answers after 100 ms, then `steps`. */
const callee = (to: string, steps: CalleeScript['steps']): CalleeScript => ({ to, answer: 'answer', ring_ms: 100, steps });

describe('endpointing: min ends a turn, max while digits are expected', () => {
  const v = simulatedVoice([
    // Asked for the amount, then digits with a 1 s pause.
    callee('+919800000022', [...ASKED_AMOUNT, ...DIGITS]),
    // After the opening (the pack's yes/no question), the same digits.
    callee('+919800000023', [{ wait_agent: 'done', ms: 200 }, ...DIGITS]),
    // With nothing asked: a DTMF key, then the same digits.
    callee('+919800000024', [{ silence_ms: 300 }, { dtmf: '1' }, ...DIGITS]),
    // Asked for the amount, keys it with a 1 s pause inside and ends it with #; then stays on the line.
    callee('+919800000025', [...ASKED_AMOUNT, { dtmf: '29' }, { silence_ms: 1000 }, { dtmf: '9#' }]),
    // The same keys without #.
    callee('+919800000026', [...ASKED_AMOUNT, { dtmf: '29' }, { silence_ms: 1000 }, { dtmf: '9' }]),
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

  type Turn = { role: string; text: string; dtmf?: string; response_id?: string; entities?: Record<string, unknown>; start: number };
  const said = (c: { transcript: Turn[] }) => c.transcript.map((t) => t.response_id ?? t.dtmf ?? t.text);

  it("keys are the agent's turn: the amount asked for, keyed and ended with #, is answered with it at once", async () => {
    v.stt.say('my recharge is not reflected');
    // A pause would end the keyed turn only after 10 s: the # ends it.
    const res = await v.dial('+919800000025', { turn: { endpointing_ms: { max: 10_000 } } });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 40_000);
    assert.deepEqual(
      said(c),
      ['GEN.GREETING', 'my recharge is not reflected', 'TELECOM.RECHARGE.ASK_AMOUNT', '2', '9', '9', '#', 'TELECOM.RECHARGE.ESCALATED'],
      JSON.stringify(c.transcript),
    );
    const [hash, reply] = c.transcript.slice(-2) as [Turn, Turn];
    assert.deepEqual(reply.entities, { amount: 299 }, JSON.stringify(reply));
    assert.ok(reply.start - hash.start < 5, `answered at the #, not after the pause: ${JSON.stringify(c.transcript)}`);
    assert.deepEqual([c.end_reason, c.outcome.final_state], ['agent_hangup', 'RECHARGE_ESCALATED'], JSON.stringify(c));
  });

  it('keys without #: the endpointing pause (max, as digits were asked for) ends them; a shorter pause between keys does not', async () => {
    v.stt.say('my recharge is not reflected');
    const res = await v.dial('+919800000026');
    const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 40_000);
    assert.deepEqual(
      said(c),
      ['GEN.GREETING', 'my recharge is not reflected', 'TELECOM.RECHARGE.ASK_AMOUNT', '2', '9', '9', 'TELECOM.RECHARGE.ESCALATED'],
      JSON.stringify(c.transcript),
    );
    assert.deepEqual(c.transcript.at(-1).entities, { amount: 299 }, JSON.stringify(c.transcript));
  });

  it('refuses endpointing_ms.max below min', async () => {
    const res = await v.dial('+919800000099', { turn: { endpointing_ms: { min: 900, max: 800 } } });
    assert.deepEqual([res.status, res.body.error.code, res.body.error.param], [400, 'invalid_request', 'turn.endpointing_ms.max']);
  });
});
