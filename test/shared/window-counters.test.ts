// Fixed-window counters: a key counted per hour and per day keeps two counters, also in the hour
// that starts the day (both windows start at the same instant), and the day's counter is not swept
// with the hour's; a bounded add (`hitUpTo`) never takes a window past its maximum, however many
// come at once, and adds into the window of the instant it is given.
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

  it('hitUpTo: adds only while the window stays within its maximum, at once or one by one, in the window of the instant given', async () => {
    const midnight = Date.UTC(2026, 10, 27);
    let now = midnight - 100;
    const windows = new WindowCounters(store.collection('rate_windows'), () => now);
    const results = await Promise.all(Array.from({ length: 10 }, () => windows.hitUpTo('tokens', DAY, 30, 100)));
    assert.equal(results.filter((r) => r !== null).length, 3, 'three of 30 fit in 100, never four');
    assert.equal((await windows.peek('tokens', DAY)).count, 90);
    assert.equal(await windows.hitUpTo('tokens', DAY, 11, 100), null);
    assert.equal((await windows.hitUpTo('tokens', DAY, 10, 100))?.count, 100, 'up to the maximum exactly');
    assert.equal(await windows.hitUpTo('fresh', DAY, 101, 100), null, 'more than the maximum, even in an empty window');
    assert.equal((await windows.peek('fresh', DAY)).count, 0);
    const before = now;
    now = midnight + 100; // the next day: a call admitted before midnight still adds to its own day
    assert.equal((await windows.hit('tokens', DAY, -40, false, before)).count, 60);
    assert.equal((await windows.hitUpTo('tokens', DAY, 40, 100, before))?.count, 100);
    assert.equal((await windows.peek('tokens', DAY)).count, 0, 'the new day untouched');
    assert.equal((await windows.peek('tokens', DAY, before)).count, 100);
  });
});
