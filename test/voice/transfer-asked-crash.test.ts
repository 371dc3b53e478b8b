// kill -9 of the gateway at the worst moment of a cold transfer (issue 41 §2): Twilio has taken the
// <Dial> update (the callee is being put through to the person) and the gateway dies before its
// answer arrives, so the call's `transfer` step is never recorded (its `transfer:asked` is). The
// restarted gateway cannot know whether the hand-off happened, and must not cut a conversation that
// may now be the person's: the call ends gateway_restart, billed up to the ask, charged once, and is
// never hung up at Twilio (before: hung up, the person's conversation cut). transfer-crash.test.ts
// kills it earlier, during the hand-off line.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { call } from '../helper.ts';
import { exited } from '../gateway-process.ts';
import { ended, waitForCall } from './helpers.ts';
import { twilioCrashRig } from './twilio-crash-rig.ts';

describe('a cold transfer across kill -9 once Twilio took the <Dial>', () => {
  it('ends gateway_restart billed to the ask, charged once, and the bridged call is not hung up', async () => {
    const rig = await twilioCrashRig('xasked', [
      { to: '+919800000046', answer: 'answer', ring_ms: 100, steps: [{ silence_ms: 20_000 }] },
      { to: '*', answer: 'answer', ring_ms: 100, steps: [] },
    ]);
    try {
      const before = (await rig.balance()).balance_microcents;
      const id = await rig.placed({ to: '+919800000045', first_message: { mode: 'wait_for_callee' } });
      await sleep(2_000); // heartbeats checkpointed
      let askedAt = 0;
      const child = rig.gw.child;
      rig.twilio.onTransfer = () => {
        askedAt = Date.now();
        child.kill('SIGKILL'); // Twilio took the <Dial>; its 200 never reaches the gateway
      };
      const asked = await call(rig.gw.url, 'POST', `/v1/voice/calls/${id}/transfer`, { token: rig.key, body: { to: '+919800000046', mode: 'cold' } });
      assert.equal(asked.status, 202, asked.text);
      await exited(child);
      const sid = rig.twilio.sidOf(id)!;
      assert.equal(rig.twilio.transfers.filter((t) => t.sid === sid).length, 1, 'Twilio took the hand-off');

      await rig.restart();
      const c = await waitForCall(rig.gw, rig.key, id, ended, 15_000);
      assert.deepEqual([c.status, c.end_reason, c.transferred_to], ['completed', 'gateway_restart', null], JSON.stringify(c));
      assert.equal(rig.hangups(sid), 0, 'a call Twilio may have put through to the person is never hung up');
      assert.ok(c.answered_at * 1000 + (c.billed_seconds - 1) * 1000 <= askedAt, `billed no further than the ask: ${c.billed_seconds} s`);
      assert.ok(c.billed_seconds >= 2 && c.billed_seconds <= 6, `billed ${c.billed_seconds} s`);
      await rig.chargedOnce(before, c.billed_seconds);
      assert.equal(rig.hangups(sid), 0);
    } finally {
      await rig.close();
    }
  });
});
