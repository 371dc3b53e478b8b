// The gateway as a real process on a data directory whose disk fills up mid-burst (a small tmpfs,
// mounted here: the test needs root and is skipped without it, saying so). A full disk makes LMDB's
// commits fail; lmdb-js leaves promises of its own unawaited then, which ended the process on
// Node's unhandled rejection. Now the process lives on, the store says it is failing (/readyz),
// metered calls are refused with 503 `store_unavailable` instead of being served unrecorded, and
// once space returns calls are served again and nothing was charged twice.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, createKey, signup } from '../helper.ts';
import { exited, launch, type Launched } from '../gateway-process.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';

const ADMIN = 'disk-full-admin-token-0123456789';
const PRICING = { input_cents_per_mtok: 150, output_cents_per_mtok: 600 };

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
  before(async () => {
    up = await startOpenAIUpstream();
    mkdirSync(join(dir, 'data'));
    gw = await launch(join(dir, 'data'), { runCode: true, env: { ADMIN_TOKEN: ADMIN } });
  });
  after(async () => {
    gw?.child.kill('SIGKILL');
    if (gw) await exited(gw.child);
    await up?.close();
    unmount();
  });

  it('lives on, refuses metered calls with 503 store_unavailable while writes fail, serves again once space returns, charges nothing twice', async () => {
    const model = {
      type: 'llm',
      owned_by: 'test',
      context_window: 4096,
      max_output_tokens: 64,
      pricing: PRICING,
      routes: [{ provider: 'openai', base_url: `${up.url}/v1`, upstream_model: 'gpt-up' }],
    };
    assert.equal((await call(gw.url, 'PUT', '/admin/models/chat-disk', { token: ADMIN, body: model })).status, 201);
    const s = await signup(gw.url);
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN, body: { user_id: s.id, amount_cents: 100 } })).status, 201);
    const key = (await createKey(gw.url, s.token)).api_key as string;
    const chat = () =>
      call(gw.url, 'POST', '/v1/chat/completions', { token: key, body: { model: 'chat-disk', messages: [{ role: 'user', content: 'hi there' }] } });
    const burst = async (n: number) =>
      (await Promise.all(Array.from({ length: n }, chat))).map((r) => (r.status === 200 ? '200' : `${r.status} ${r.body?.error?.code}`));

    assert.deepEqual(new Set(await burst(10)), new Set(['200']));
    fill(join(dir, 'filler'));
    const during: string[] = [];
    for (let round = 0; round < 20 && !during.includes('503 store_unavailable'); round++) {
      during.push(...(await burst(10)));
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(gw.child.exitCode, null, 'the process lives on');
    assert.ok(during.includes('503 store_unavailable'), `refused while the disk is full: ${during.join(', ')}`);
    assert.ok(
      during.every((r) => r === '200' || r === '503 store_unavailable'),
      during.join(', '),
    );
    assert.deepEqual(new Set(await burst(5)), new Set(['503 store_unavailable']), 'every call refused once the store says it is failing');
    assert.equal((await call(gw.url, 'GET', '/readyz')).status, 503, 'not ready while writes fail');

    rmSync(join(dir, 'filler'));
    let after: string[] = [];
    for (let i = 0; i < 50 && !after.includes('200'); i++) {
      await new Promise((r) => setTimeout(r, 200));
      after = await burst(1);
    }
    assert.deepEqual(after, ['200'], 'served again once space returns');
    assert.deepEqual(new Set(await burst(10)), new Set(['200']));
    assert.equal((await call(gw.url, 'GET', '/readyz')).status, 200);

    // Nothing charged twice: the wallet never lost more than the usage records say it was charged.
    await new Promise((r) => setTimeout(r, 500)); // the usage flush
    const records: { cost_microcents: number }[] = [];
    let next: string | null = null;
    do {
      const page: any = (await call(gw.url, 'GET', `/portal/usage/records?limit=100${next ? `&after=${next}` : ''}`, { token: s.token })).body;
      records.push(...page.data);
      next = page.has_more ? page.next_after : null;
    } while (next);
    const wallet = (await call(gw.url, 'GET', '/portal/wallet', { token: s.token })).body;
    const spent = records.reduce((sum, r) => sum + r.cost_microcents, 0);
    assert.ok(wallet.balance_microcents + spent >= 100_000_000, `balance ${wallet.balance_microcents} + recorded ${spent}`);
    assert.equal(wallet.held_cents, 0, 'nothing left held');
  });
});
