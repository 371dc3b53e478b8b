// The tool requests in flight (src/voice/tool-journal.ts) on the embedded store: one answered is
// gone; one left is recorded on the call's transcript as an `interrupted` tool turn after its last
// turn, once, even when the finish that records it runs again after dying half-way (its turn
// number kept with it before the turn is written, so the replay writes the same turn).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { openEmbeddedStore } from '../../src/store/embedded/store.ts';
import type { Store } from '../../src/store/port.ts';
import { CallTranscripts } from '../../src/voice/transcript.ts';
import { ToolJournal } from '../../src/voice/tool-journal.ts';

describe('the tool journal', () => {
  let dir: string;
  let store: Store;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tool-journal-'));
    store = await openEmbeddedStore({ dir });
  });
  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('records what was left in flight as interrupted, once, after the last turn', async () => {
    const transcripts = new CallTranscripts(store, Date.now);
    await transcripts.init();
    const journal = new ToolJournal(store, transcripts, Date.now, pino({ level: 'silent' }));
    await journal.init();
    const callId = 'call_000000000000000000000001';
    await transcripts.append(callId, 'u1', 0, { role: 'callee', text: 'what is my balance', start: 1, end: 2 });
    await journal.sent(callId, { id: 'call_a', type: 'function', name: 'get_balance', arguments: {} }, 2.5);
    await journal.sent(callId, { id: 'call_b', type: 'function', name: 'block_card', arguments: { card: '1' } }, 2.6);
    await journal.answered(callId, 'call_a');
    // A finish that died after writing the turn but before deleting the request, then ran again.
    const failing = new ToolJournal(
      store,
      {
        nextSeq: (id) => transcripts.nextSeq(id),
        append: async (...args) => {
          await transcripts.append(...args);
          throw new Error('killed');
        },
      },
      Date.now,
      pino({ level: 'silent' }),
    );
    await assert.rejects(failing.interrupted(callId, 'u1'), /killed/);
    assert.equal(await journal.interrupted(callId, 'u1'), 1);
    assert.equal(await journal.interrupted(callId, 'u1'), 0, 'nothing left the second time');
    const turns = await transcripts.of('u1', callId);
    assert.deepEqual(
      turns.map((t) => [t.role, t.text, t.tool?.status ?? null]),
      [
        ['callee', 'what is my balance', null],
        ['tool', 'block_card: interrupted', 'interrupted'],
      ],
    );
  });
});
