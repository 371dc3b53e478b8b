// GET /portal/keys as the dashboard reads it: pages newest first, search over every key (not the
// page), status filters, and the query's validation.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call, createKey, signup, startTestGateway, walkPages, type TestGateway } from '../helper.ts';
import { KEY_PREFIX, type KeyDoc } from '../../src/identity/keys.ts';

describe('key list pages', () => {
  let gw: TestGateway;
  let clock = Date.now();
  before(async () => {
    gw = await startTestGateway({ keys: { maxActivePerUser: 1000 } }, { now: () => clock });
  });
  after(() => gw.destroy());

  /** All pages of `query`: the ids and names in order, and the number of requests. */
  async function walk(token: string, query: string): Promise<{ ids: number[]; names: string[]; requests: number }> {
    const { items, requests } = await walkPages<{ id: number; name: string }>(gw.url, `/portal/keys?${query}`, token);
    return { ids: items.map((k) => k.id), names: items.map((k) => k.name), requests };
  }

  it('pages through every key newest first, without repeats, whatever the page size', async () => {
    const s = await signup(gw.url);
    const made: number[] = [];
    for (let i = 0; i < 23; i++) made.push((await createKey(gw.url, s.token, { name: `k${i}` })).id);
    const newestFirst = [...made].reverse();
    for (const limit of [1, 7, 23, 100]) {
      const { ids, requests } = await walk(s.token, `limit=${limit}`);
      assert.deepEqual(ids, newestFirst, `limit ${limit}`);
      assert.equal(requests, Math.ceil(23 / limit));
    }
    const first = await call(gw.url, 'GET', '/portal/keys', { token: s.token });
    assert.equal(first.body.data.length, 20, 'default limit 20');
    assert.equal(first.body.has_more, true);
    assert.equal(first.body.next_after, String(newestFirst[19]));
    assert.ok(
      first.body.data.every((k: Record<string, unknown>) => !('api_key' in k)),
      'never a full key in a list',
    );
    const other = await signup(gw.url);
    assert.deepEqual((await call(gw.url, 'GET', '/portal/keys', { token: other.token })).body, { data: [], has_more: false, next_after: null });
    const theirs = await call(gw.url, 'GET', `/portal/keys?after=${newestFirst[0]! + 1}`, { token: other.token });
    assert.equal(theirs.body.data.length, 0, "another account's cursor shows nothing of theirs");
  });

  it('searches name and prefix ignoring case, over all keys: a key on the last page is found', async () => {
    const s = await signup(gw.url);
    // 12,000 keys, more than one search request tests: the oldest is the needle.
    const base = 5_000_000;
    const doc = (i: number, name: string): KeyDoc => {
      const jti = `${(base + i).toString(16).padStart(12, '0')}${'0'.repeat(20)}`;
      const at = new Date(clock - (20_000 - i) * 1000);
      return {
        _id: base + i,
        jti,
        user_id: s.id,
        name,
        prefix: KEY_PREFIX + jti.slice(0, 12),
        scopes: ['*'],
        token_hash: 'x',
        iat: 0,
        exp: null,
        expires_at: null,
        created_at: at,
        revoked_at: at,
        last_used_at: null,
        expired_event_at: null,
        user_rpm: null,
        user_tpd: null,
        admin_rpm: null,
        admin_tpd: null,
      };
    };
    const docs = [doc(0, 'Billing NEEDLE worker'), ...Array.from({ length: 11_999 }, (_, i) => doc(i + 1, `service ${i}`))];
    for (let i = 0; i < docs.length; i += 3000) await gw.store.collection<KeyDoc>('api_keys').insertMany(docs.slice(i, i + 3000));
    // Ids come from one counter, so a key created now is newer than all of them.
    await gw.store.collection('counters').updateOne({ _id: 'api_keys' }, { $max: { seq: base + 20_000 } });
    const fresh = await createKey(gw.url, s.token, { name: 'Needle two' });

    const needle = await walk(s.token, 'search=nEeDlE&limit=5');
    assert.deepEqual(needle.names, ['Needle two', 'Billing NEEDLE worker'], 'newest first, found across every key');
    assert.ok(needle.requests >= 2, 'a search walks at most a budget of keys per request, then hands on its cursor');

    const byPrefix = await walk(s.token, `search=${docs[0]!.prefix.slice(8).toUpperCase()}`);
    assert.deepEqual(byPrefix.ids, [base], 'part of the prefix, any case');
    const whole = await walk(s.token, `search=${docs[0]!.prefix}`);
    assert.deepEqual(whole.ids, [base]);

    const common = await call(gw.url, 'GET', '/portal/keys?search=SERVICE&limit=3', { token: s.token });
    assert.deepEqual(
      common.body.data.map((k: { name: string }) => k.name),
      ['service 11998', 'service 11997', 'service 11996'],
    );
    assert.equal(common.body.has_more, true);
    const next = await call(gw.url, 'GET', `/portal/keys?search=SERVICE&limit=3&after=${common.body.next_after}`, { token: s.token });
    assert.deepEqual(
      next.body.data.map((k: { name: string }) => k.name),
      ['service 11995', 'service 11994', 'service 11993'],
    );

    const regexChars = await walk(s.token, `search=${encodeURIComponent('.*')}`);
    assert.deepEqual(regexChars.ids, [], 'the term is text, not a pattern');
    assert.equal(fresh.prefix.length, 20);
  });

  it('filters by status: active, revoked, expired', async () => {
    const s = await signup(gw.url);
    const active = await createKey(gw.url, s.token, { name: 'active' });
    const revoked = await createKey(gw.url, s.token, { name: 'revoked' });
    await call(gw.url, 'DELETE', `/portal/keys/${revoked.id}`, { token: s.token });
    const expiring = await createKey(gw.url, s.token, { name: 'expiring', expires_at: new Date(clock + 60_000).toISOString() });
    const ids = async (status: string) => (await walk(s.token, `status=${status}`)).ids;
    assert.deepEqual(await ids('active'), [expiring.id, active.id]);
    assert.deepEqual(await ids('revoked'), [revoked.id]);
    assert.deepEqual(await ids('expired'), []);
    clock += 120_000;
    assert.deepEqual(await ids('active'), [active.id]);
    assert.deepEqual(await ids('expired'), [expiring.id]);
    assert.deepEqual((await walk(s.token, 'status=active&search=ACT')).ids, [active.id]);
  });

  it('refuses a bad query with 400 in the envelope', async () => {
    const s = await signup(gw.url);
    for (const q of [
      'limit=0',
      'limit=101',
      'limit=abc',
      'after=x1',
      'after=-1',
      'status=bogus',
      'search=',
      'other=1',
      `search=${'a'.repeat(101)}`,
      'search=%01',
      'search=a&search=b',
      'limit=5&limit=6',
    ]) {
      const res = await call(gw.url, 'GET', `/portal/keys?${q}`, { token: s.token });
      assert.equal(res.status, 400, q);
      assert.equal(res.body.error.code, 'invalid_request', q);
    }
  });
});
