// The gateway as a real process on a data directory whose disk fills up mid-burst (a small tmpfs,
// mounted here: the test needs root and is skipped without it, saying so). A full disk makes LMDB's
// commits fail; lmdb-js leaves promises of its own unawaited then, which ended the process on
// Node's unhandled rejection. Now the process lives on, the store says it is failing (/readyz),
// metered calls are refused with 503 `store_unavailable` instead of being served unrecorded, and
// the settles of calls answered as the disk filled (lazy writes whose commit failed: once 10,800 µ¢
// and 25 usage records of 90 calls were lost) are kept and written once space returns: every
// answered call charged and recorded exactly once, also on disk after a kill -9.
// test/store/commit-faults.test.ts proves the same with a fault injected in the store, without root.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call } from '../helper.ts';
import { PRICING, chat, fundedAccount, putModel, storedUsage } from '../billing/crash-helpers.ts';
import { exited, launch, type Launched } from '../gateway-process.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';

const ADMIN = 'disk-full-admin-token-0123456789';
const START_UC = 100 * 1_000_000; // the account's 100 ¢

/** A tmpfs of `mb` MB mounted on a new folder, or why it cannot be (not root, no mount permission). */
function smallDisk(mb: number): { dir: string; unmount(): void } | string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-disk-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', dir], { encoding: 'utf8' });
  if (mounted.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return `mounting a ${mb} MB tmpfs needs root: ${(mounted.stderr || mounted.error?.message || '').trim()}`;
  }
  return {
    dir,
    unmount: () => {
      spawnSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Fills the disk holding `dir` with one file, to its last byte. */
function fill(file: string): void {
  const fd = openSync(file, 'w');
  const block = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, block);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    for (let n = 4096; n >= 1; n = Math.floor(n / 2)) {
      try {
        for (;;) writeSync(fd, block.subarray(0, n));
      } catch {} // full at this size: a smaller one
    }
  } finally {
    closeSync(fd);
  }
}

const disk = smallDisk(16);

describe('a full disk under a burst of metered calls', { skip: typeof disk === 'string' ? disk : false }, () => {
  const { dir, unmount } = disk as Exclude<typeof disk, string>;
  let gw: Launched;
  let up: FakeServer;
  /** The first test's account and its figures, which the kill -9 test checks again from the disk. */
  let exactAgain: ((url: string, when: string) => Promise<void>) | null = null;
  before(async () => {
    up = await startOpenAIUpstream({ apiKey: 'sk-up' });
    mkdirSync(join(dir, 'data'));
    gw = await launch(join(dir, 'data'), { runCode: true, env: { ADMIN_TOKEN: ADMIN } });
  });
  after(async () => {
    gw?.child.kill('SIGKILL');
    if (gw) await exited(gw.child);
    await up?.close();
    unmount();
  });

  it('lives on, refuses new calls with 503 store_unavailable while writes fail, and once space returns every answered call is charged and recorded exactly once', async () => {
    await putModel(gw.url, ADMIN, up.url, 'chat-disk');
    const acct = await fundedAccount(gw.url, ADMIN, 100);
    let answered = 0; // µ¢ the clients were told they were charged
    let served = 0;
    const burst = async (n: number) =>
      Promise.all(
        Array.from({ length: n }, async () => {
          const r = await chat(gw.url, acct.key, 'chat-disk');
          if (r.status !== 200) return `${r.status} ${((await r.json()) as { error?: { code?: string } }).error?.code}`;
          const { usage } = (await r.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
          answered += usage.prompt_tokens * PRICING.input_cents_per_mtok + usage.completion_tokens * PRICING.output_cents_per_mtok;
          served++;
          return '200';
        }),
      );

    assert.deepEqual(new Set(await burst(10)), new Set(['200']));
    fill(join(dir, 'filler'));
    // LMDB reuses the pages its commits free, so a small write may still commit on the full disk and
    // the store may serve again for a moment: what holds is that it refuses whenever it cannot record.
    const during: string[] = [];
    let notReady = false;
    for (let round = 0; round < 30 && !(during.includes('503 store_unavailable') && notReady); round++) {
      during.push(...(await burst(10)));
      notReady ||= (await call(gw.url, 'GET', '/readyz')).status === 503;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(gw.child.exitCode, null, 'the process lives on');
    assert.ok(during.includes('503 store_unavailable'), `refused while the disk is full: ${during.join(', ')}`);
    assert.ok(notReady, 'not ready while writes fail');
    assert.ok(
      during.every((r) => r === '200' || r === '503 store_unavailable'),
      during.join(', '),
    );
    // The wallet read while the disk is full shows every answered call's debit (the overlay), not the disk's older state.
    const whileFull = (await call(gw.url, 'GET', '/portal/wallet', { token: acct.token })).body;
    assert.deepEqual([whileFull.balance_microcents, whileFull.held_cents], [START_UC - answered, 0], 'the wallet as read while full');

    rmSync(join(dir, 'filler'));
    let after: string[] = [];
    for (let i = 0; i < 50 && !after.includes('200'); i++) {
      await new Promise((r) => setTimeout(r, 200));
      after = await burst(1);
    }
    assert.deepEqual(after, ['200'], 'served again once space returns');
    assert.deepEqual(new Set(await burst(10)), new Set(['200']));
    assert.equal((await call(gw.url, 'GET', '/readyz')).status, 200);

    // Exactly once: the wallet's debit is what the clients were told, and the usage records and the
    // usage summary (rollups) say the same, to the µ¢; then again from the disk, after kill -9.
    const exact = async (url: string, when: string) => {
      let stored = await storedUsage(url, acct.token);
      for (let i = 0; i < 50 && stored.count < served; i++) {
        await new Promise((r) => setTimeout(r, 100)); // the usage flush, retried once writes commit
        stored = await storedUsage(url, acct.token);
      }
      const debit = START_UC - stored.wallet.balance_microcents;
      const errors = () => JSON.stringify(gw.logs.filter((l) => (l.level as number) >= 50).slice(-3));
      assert.equal(
        debit,
        answered,
        `${when}: the wallet's debit is what ${served} answered calls cost (${JSON.stringify(stored.wallet)}; errors logged: ${errors()})`,
      );
      assert.deepEqual([stored.count, stored.cost], [served, answered], `${when}: one usage record per answered call`);
      assert.deepEqual([stored.summary.requests, stored.summary.cost_microcents], [served, answered], `${when}: the usage summary agrees`);
      assert.equal(stored.wallet.held_cents, 0, `${when}: nothing left held`);
    };
    console.log(
      `disk full: ${during.filter((r) => r === '200').length} calls answered and ${during.filter((r) => r !== '200').length} refused while it filled; ${served} answered in all, ${answered} µ¢`,
    );
    await exact(gw.url, 'after space returned');
    exactAgain = exact;
  });

  // Documents of a shape first written in a failed commit once did not read back here about one run
  // in three (src/store/embedded/structures.ts; test/store/commit-faults.test.ts proves it alone).
  it('after kill -9 and a restart, the same from the disk', async () => {
    assert.ok(exactAgain, 'the first test ran');
    await new Promise((r) => setTimeout(r, 200));
    const gone = exited(gw.child);
    gw.child.kill('SIGKILL');
    await gone;
    gw = await launch(join(dir, 'data'), { runCode: true, env: { ADMIN_TOKEN: ADMIN } });
    await exactAgain(gw.url, 'after kill -9 and a restart');
  });
});
