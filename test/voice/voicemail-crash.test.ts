// kill -9 of the gateway while a call's voicemail message is playing (issue 41 §1): a Twilio call
// answered by a machine (its greeting, its beep, Twilio's machine_end_beep) is leaving its message
// when the process dies. The message was not left whole, so the restarted gateway does not claim
// it was: the call ends `gateway_restart` (not `voicemail`), billed up to its last heartbeat and
// charged once, hung up at Twilio once, and keeps `answered_by: machine` (recorded before the crash).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ended, waitForCall } from './helpers.ts';
import { twilioCrashRig } from './twilio-crash-rig.ts';

const GREETING = 'Hello, you have reached the voicemail of Dan. Please leave a message.';
const MESSAGE =
  'Hello, this is your bank calling about your card. Please call us back at your earliest convenience, any day of the week, between nine and six.';

describe('a voicemail message across kill -9', () => {
  it('ends gateway_restart with answered_by kept, billed and charged once, hung up once', async () => {
    const rig = await twilioCrashRig('vmcrash', [
      {
        to: '+919800000076',
        answer: 'answer',
        ring_ms: 100,
        steps: [{ silence_ms: 300 }, { say: GREETING }, { silence_ms: 300 }, { beep_ms: 400 }, { silence_ms: 30_000 }],
      },
    ]);
    try {
      const before = (await rig.balance()).balance_microcents;
      const id = await rig.placed({ to: '+919800000076', voicemail: { action: 'leave_message', text: MESSAGE } });
      // The message plays once the beep is over: kill when a second of it has gone out.
      const playing = async () => {
        for (let i = 0; i < 300; i++) {
          const line = rig.twilio.lines.get(id);
          const beepEnd = line?.said[1];
          if (beepEnd !== undefined && line!.media.filter((at) => at > beepEnd).length >= 50) return;
          await sleep(50);
        }
        throw new Error('the message never played');
      };
      await playing();
      const sid = rig.twilio.sidOf(id)!;
      const killedAt = Date.now();
      await rig.restart();
      const c = await waitForCall(rig.gw, rig.key, id, ended, 15_000);
      assert.deepEqual([c.status, c.end_reason, c.answered_by], ['completed', 'gateway_restart', 'machine'], JSON.stringify(c));
      assert.equal(rig.hangups(sid), 1, 'the orphaned call is hung up once');
      assert.ok(c.billed_seconds >= 1 && c.answered_at * 1000 + (c.billed_seconds - 1) * 1000 <= killedAt, `billed ${c.billed_seconds} s`);
      await rig.chargedOnce(before, c.billed_seconds);
      const again = await waitForCall(rig.gw, rig.key, id, ended);
      assert.deepEqual([again.end_reason, again.answered_by, again.billed_seconds], ['gateway_restart', 'machine', c.billed_seconds]);
    } finally {
      await rig.close();
    }
  });
});
