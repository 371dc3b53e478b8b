// A call's transcript records (src/voice/transcript.ts) on the embedded store: a turn written twice
// under its number is one turn, reads are the paying account's, the cap leaves later turns out, the
// voice kind's retention deletes them; the live side's actor wrapper records each turn before the
// actor hears of it and keeps the events in the order they were sent.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Turn, VoiceCallEvent } from '../../machines/voice-call.machine.ts';
import { voiceCallKind } from '../../src/voice/kind.ts';
import { CallTranscripts, MAX_TURNS, recordingTurns } from '../../src/voice/transcript.ts';
import { openTestStore, silent, tempDir } from '../actors/helpers.ts';

const turn = (text: string): Turn => ({ role: 'callee', text, start: 0, end: 1 });

test('turns are kept once per number, read by their account only, capped, and deleted with the call', async (t) => {
  const { dir, remove } = tempDir();
  const store = await openTestStore(dir);
  t.after(async () => {
    await store.close();
    remove();
  });
  const transcripts = new CallTranscripts(store, Date.now);
  await transcripts.init();
  assert.equal(await transcripts.append('call_t', 'user:1', 0, turn('hello')), true);
  assert.equal(await transcripts.append('call_t', 'user:1', 0, turn('hello')), true, 'written again (a retry): the same turn');
  assert.equal(await transcripts.append('call_t', 'user:1', 1, turn('again')), true);
  assert.equal(await transcripts.append('call_t', 'user:1', MAX_TURNS, turn('late')), false, 'past the cap: left out');
  assert.equal(await transcripts.append('call_u', 'user:1', 0, turn('another call')), true);
  assert.deepEqual(
    (await transcripts.of('user:1', 'call_t')).map((x) => x.text),
    ['hello', 'again'],
  );
  assert.deepEqual(await transcripts.of('user:2', 'call_t'), [], "another account's call reads as none");
  const kind = voiceCallKind({
    meter: { resume: () => assert.fail() },
    events: { emit: async () => undefined },
    now: Date.now,
    checkpointMs: 1000,
    retainMs: 0,
    transcripts,
  });
  await kind.onRetired?.('call_t');
  assert.deepEqual(await transcripts.of('user:1', 'call_t'), []);
  assert.equal((await transcripts.of('user:1', 'call_u')).length, 1, 'the other call keeps its turns');
});

test("the live side's actor: each turn numbered and recorded before the actor hears of it, every event in order", async () => {
  const recorded: Array<[number, string]> = [];
  const told: string[] = [];
  let failNext = false;
  const turns = {
    async append(_callId: string, _account: string, seq: number, t: Turn): Promise<boolean> {
      await new Promise((r) => setTimeout(r, t.text === 'slow' ? 30 : 1));
      if (failNext) {
        failNext = false;
        throw new Error('store down');
      }
      recorded.push([seq, t.text]);
      return true;
    },
  };
  const actor = {
    async send(event: VoiceCallEvent) {
      const seen = event.type === 'turn' ? event.turn.text : event.type;
      if (event.type === 'turn') assert.ok(recorded.some(([, text]) => text === seen) || seen === 'lost', `${seen} recorded first`);
      told.push(seen);
    },
  };
  const wrapped = recordingTurns(actor, { callId: 'call_w', account: 'user:1', turns }, silent);
  const now = 0;
  const sends = [
    wrapped.send({ type: 'turn', now, turn: turn('slow') }, { wait: 'applied' }),
    wrapped.send({ type: 'media.heartbeat', now }, { wait: 'applied' }),
    wrapped.send({ type: 'turn', now, turn: turn('fast') }, { wait: 'applied' }),
  ];
  await Promise.all(sends);
  failNext = true;
  await wrapped.send({ type: 'turn', now, turn: turn('lost') }, { wait: 'applied' });
  await wrapped.send({ type: 'media.ending', now, reason: 'callee_hangup' }, { wait: 'durable' });
  assert.deepEqual(told, ['slow', 'media.heartbeat', 'fast', 'lost', 'media.ending'], 'in the order sent, the unrecorded turn told too');
  assert.deepEqual(
    recorded.sort((a, b) => a[0] - b[0]),
    [
      [0, 'slow'],
      [1, 'fast'],
    ],
  );
});
