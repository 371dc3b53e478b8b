// Fixed-window counters: a key counted per hour and per day keeps two counters, also in the hour
// that starts the day (both windows start at the same instant), and the day's counter is not swept
// with the hour's.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedStore } from '../../src/store/embedded/store.ts';
import type { Store } from '../../src/store/port.ts';
import { WindowCounters } from '../../src/shared/common.ts';

const HOUR = 3600;
const DAY = 86_400;

describe('WindowCounters', () => {
  let dir: string;
  let store: Store;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'windows-'));
    store = await openEmbeddedStore({ dir });
  });
  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps an hour and a day that start together apart', async () => {
    const midnight = Date.UTC(2026, 10, 25);
    let now = midnight + 10_000;
    const windows = new WindowCounters(store.collection('rate_windows'), () => now);
    await windows.init();
    assert.equal((await windows.hit('invites', HOUR)).count, 1);
    assert.equal((await windows.hit('invites', DAY)).count, 1);
    assert.equal((await windows.hit('invites', HOUR)).count, 2);
    const day = await windows.peek('invites', DAY);
    assert.equal(day.count, 1);
    assert.equal(day.resetAt, midnight + DAY * 1000);
    // The next hour: a fresh hour, the same day.
    now = midnight + HOUR * 1000 + 5;
    assert.equal((await windows.peek('invites', HOUR)).count, 0);
    assert.equal((await windows.hit('invites', DAY)).count, 2);
  });

  it("gives the day's counter the day's expiry", async () => {
    const midnight = Date.UTC(2026, 10, 26);
    const windows = new WindowCounters(store.collection('rate_windows'), () => midnight);
    await windows.hit('k', HOUR);
    await windows.hit('k', DAY);
    const docs = await store.collection<{ _id: string; expires_at: Date }>('rate_windows').find({});
    const expiries = docs
      .filter((d) => d._id.startsWith('k'))
      .map((d) => d.expires_at.getTime())
      .sort();
    assert.deepEqual(expiries, [midnight + HOUR * 1000, midnight + DAY * 1000]);
  });
});
