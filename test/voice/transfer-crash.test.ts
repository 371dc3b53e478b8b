// kill -9 of the gateway in the middle of a cold transfer (issue 41 §2, test/voice/crash.test.ts
// shows the set-up): the API asked the transfer and the hand-off line is playing when the process
// dies. The restarted gateway restores the call's actor in `transferring`; its `transfer` step was
// never recorded (the carrier was not asked), so the call ends gateway_restart, is hung up at the
// (fake) Twilio like any orphaned call, and is charged once (a clean restart charges nothing more).
// Had the carrier taken the hand-off, the step says so and the call ends transferred, not hung up.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { call } from '../helper.ts';
import { ended, waitForCall } from './helpers.ts';
import { twilioCrashRig } from './twilio-crash-rig.ts';

describe('a cold transfer across kill -9', () => {
  it('ends with a clear reason and is charged once', async () => {
    const rig = await twilioCrashRig('xcrash', [
      { to: '+919800000041', answer: 'answer', ring_ms: 100, steps: [] },
      { to: '*', answer: 'answer', ring_ms: 100, steps: [] },
    ]);
    try {
      const before = (await rig.balance()).balance_microcents;
      const id = await rig.placed({ to: '+919800000040', first_message: { mode: 'wait_for_callee' } });
      await sleep(2_000); // heartbeats checkpointed
      const asked = await call(rig.gw.url, 'POST', `/v1/voice/calls/${id}/transfer`, { token: rig.key, body: { to: '+919800000041', mode: 'cold' } });
      assert.equal(asked.status, 202, asked.text);
      await sleep(300); // the hand-off line is being rendered or played
      const sid = rig.twilio.sidOf(id)!;
      await rig.restart();
      const bridged = rig.twilio.transfers.some((t) => t.sid === sid);
      const c = await waitForCall(rig.gw, rig.key, id, ended, 15_000);
      // The clear reason: the carrier took the hand-off (transferred) or not (gateway_restart).
      assert.deepEqual(
        [c.status, c.end_reason, c.transferred_to],
        bridged ? ['completed', 'transferred', '+919800000041'] : ['completed', 'gateway_restart', null],
        JSON.stringify(c),
      );
      assert.equal(bridged, false, 'killed during the hand-off line: the carrier was never asked');
      assert.equal(rig.hangups(sid), 1, 'the orphaned call is hung up once');
      assert.ok(c.billed_seconds >= 1 && c.billed_seconds <= 5, `billed ${c.billed_seconds} s`);
      await rig.chargedOnce(before, c.billed_seconds);
    } finally {
      await rig.close();
    }
  });
});
