// The gateway as a real process, started as `npm start` starts it (the esbuild bundle, built once
// here): what it acknowledged survives `kill -9`, SIGTERM shuts it down cleanly (exit 0, store
// closed, restart finds everything), and the bundle finds config/ from any working directory.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { call, createKey, joinOrg, signup } from '../helper.ts';
import { buildBundle, exited, launch } from '../gateway-process.ts';

describe('gateway process', () => {
  before(buildBundle);

  it('shuts down gracefully when `npm start` (the Quick start) gets SIGTERM', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-npm-'));
    try {
      const gw = await launch(join(dir, 'data'), { npmStart: true });
      const lines: string[] = [];
      createInterface({ input: gw.child.stdout! }).on('line', (l) => lines.push(l));
      try {
        assert.equal((await call(gw.url, 'GET', '/healthz')).status, 200);
        const done = exited(gw.child);
        gw.child.kill('SIGTERM'); // to npm, which must pass it on to the gateway (not to a shell that ignores it)
        await done;
        await new Promise((r) => setTimeout(r, 200));
        assert.ok(
          lines.some((l) => l.includes('"gateway stopped"')),
          lines.join('\n'),
        );
        await assert.rejects(fetch(`${gw.url}/healthz`), 'the gateway still answers');
      } finally {
        try {
          process.kill(-gw.child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('starts from the bundle in any working directory, with its config/ (seeded intent packs) and OpenAPI document', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-cwd-'));
    const admin = 'admin-token-for-the-bundle-test';
    try {
      const gw = await launch(join(dir, 'data'), { cwd: dir, env: { ADMIN_TOKEN: admin } });
      try {
        const packs = await call(gw.url, 'GET', '/admin/intent-packs', { token: admin });
        assert.equal(packs.status, 200);
        assert.ok(
          packs.body.data.some((p: { id: string }) => p.id === 'demo-banking-telecom'),
          JSON.stringify(packs.body),
        );
        const doc = await call(gw.url, 'GET', '/openapi.json');
        assert.equal(doc.status, 200);
        assert.ok(doc.body.paths['/v1/chat/completions']);
        const done = exited(gw.child);
        gw.child.kill('SIGTERM');
        assert.deepEqual(await done, { code: 0, signal: null });
      } finally {
        gw.child.kill('SIGKILL');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps every acknowledged account, session, key, org and revocation across kill -9', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-kill-'));
    try {
      const first = await launch(join(dir, 'data'));
      const owner = await signup(first.url);
      const member = await signup(first.url);
      const org = await call(first.url, 'POST', '/portal/org', { token: owner.token, body: { name: 'Durable' } });
      assert.equal(org.status, 201);
      await joinOrg(first.url, owner.token, member);
      const live = await createKey(first.url, member.token, { name: 'live' });
      const dead = await createKey(first.url, member.token, { name: 'dead' });
      assert.equal((await call(first.url, 'DELETE', `/portal/keys/${dead.id}`, { token: member.token })).status, 200);
      // The very last acknowledged write before the kill.
      const lastKey = await createKey(first.url, owner.token, { name: 'last' });

      const gone = exited(first.child);
      first.child.kill('SIGKILL');
      assert.equal((await gone).signal, 'SIGKILL');

      const second = await launch(join(dir, 'data'));
      try {
        assert.equal((await call(second.url, 'GET', '/portal/me', { token: owner.token })).status, 200, 'session survived');
        const login = await call(second.url, 'POST', '/portal/auth/login', { body: { email: member.email, password: 'correct horse battery' } });
        assert.equal(login.status, 200);
        assert.equal((await call(second.url, 'GET', '/v1/models', { token: live.api_key })).status, 200, 'key survived, same signing secret');
        assert.equal((await call(second.url, 'GET', '/v1/models', { token: lastKey.api_key })).status, 200, 'last acknowledged write survived');
        assert.equal((await call(second.url, 'GET', '/v1/models', { token: dead.api_key })).status, 401, 'revocation survived');
        const members = await call(second.url, 'GET', '/portal/org/members', { token: owner.token });
        assert.deepEqual(
          members.body.members.map((m: any) => m.role),
          ['owner', 'member'],
        );
        const fetched = await call(second.url, 'GET', `/portal/keys/${live.id}`, { token: member.token });
        assert.equal(fetched.body.api_key, live.api_key);

        // SIGTERM: graceful, exit code 0, and the data is still there afterwards.
        const done = exited(second.child);
        second.child.kill('SIGTERM');
        assert.deepEqual(await done, { code: 0, signal: null });
      } finally {
        second.child.kill('SIGKILL');
      }
      const third = await launch(join(dir, 'data'));
      try {
        assert.equal((await call(third.url, 'GET', '/v1/models', { token: live.api_key })).status, 200);
        assert.ok(third.startMs < 10_000, `start took ${third.startMs} ms`);
      } finally {
        third.child.kill('SIGKILL');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
