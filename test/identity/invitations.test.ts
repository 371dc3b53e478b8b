// The inviter learns nothing from how an invitation is made: the store work (collections, operations,
// the fields they name) is the same for an unknown e-mail, a user in another organization and a free
// user. Checked on the services over a store that records every call. Also: an acceptance that loses
// its race with a revoke leaves no membership behind.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedStore } from '../../src/store/embedded/store.ts';
import type { Collection, Store } from '../../src/store/port.ts';
import { AccountService } from '../../src/identity/accounts.ts';
import { InvitationRecords } from '../../src/identity/invitation-records.ts';
import { InvitationService } from '../../src/identity/invitations.ts';
import { OrgService } from '../../src/identity/orgs.ts';
import { noAccountWallets } from '../../src/identity/account-wallets.ts';
import { testConfig } from '../helper.ts';

/** A store whose collections log `name.method(keys of the first argument)` for every call. */
function recording(store: Store, log: string[]): Store {
  const shape = (arg: unknown) => (arg && typeof arg === 'object' ? Object.keys(arg).sort().join(',') : typeof arg);
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop !== 'collection') return Reflect.get(target, prop, receiver);
      return (name: string) =>
        new Proxy(target.collection(name), {
          get(c: Collection, method) {
            const fn = Reflect.get(c, method);
            if (typeof fn !== 'function') return fn;
            return (...args: unknown[]) => {
              log.push(`${name}.${String(method)}(${shape(args[0])})`);
              return fn.apply(c, args);
            };
          },
        });
    },
  });
}

/** Records whose next decide() first lets the organization revoke the invitation (a revoke racing an accept). */
class RacingRecords extends InvitationRecords {
  revokeFirst: number | null = null;
  override async decide(id: number, userId: number, status: 'accepted' | 'declined'): Promise<boolean> {
    if (this.revokeFirst !== null) await this.revoke(id, this.revokeFirst);
    this.revokeFirst = null;
    return super.decide(id, userId, status);
  }
}

describe('invitation store work', () => {
  let dir: string;
  let store: Store;
  const log: string[] = [];
  let invitations: InvitationService;
  let accounts: AccountService;
  let orgs: OrgService;
  let records: RacingRecords;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gw-invite-'));
    store = await openEmbeddedStore({ dir });
    const config = testConfig(dir);
    const rec = recording(store, log);
    const now = Date.now;
    accounts = new AccountService(rec, config.auth, noAccountWallets, now);
    records = new RacingRecords(rec, config.orgs.invitations.ttlHours * 3_600_000, now);
    orgs = new OrgService(rec, accounts, config.orgs, records, noAccountWallets, now);
    invitations = new InvitationService(rec, records, orgs, accounts, config.orgs.invitations, now);
    await accounts.init();
    await orgs.init();
    await invitations.init();
  });
  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('is the same for an unknown e-mail, a user in another organization and a free user', async () => {
    const user = async (email: string) => (await accounts.signup(email, 'correct horse battery', '127.0.0.1')).user;
    const inviter = await user('inviter@example.com');
    await orgs.create(inviter.id, 'Acme');
    const elsewhere = await user('elsewhere@example.com');
    await orgs.create(elsewhere.id, 'Other');
    await user('free@example.com');

    const runs: string[][] = [];
    for (const email of ['nobody@example.com', 'elsewhere@example.com', 'free@example.com']) {
      log.length = 0;
      const inv = await invitations.invite(inviter, email, 'member');
      assert.equal(inv.email, email);
      runs.push([...log]);
    }
    assert.ok(
      runs[0]!.some((op) => op.startsWith('users.findOne')),
      'the account is looked up',
    );
    assert.ok(
      runs[0]!.some((op) => op.startsWith('org_invitations.insertOne')),
      'an invitation is stored',
    );
    assert.deepEqual(runs[1], runs[0]);
    assert.deepEqual(runs[2], runs[0]);
  });

  it('an acceptance that loses to a revoke between joining and claiming undoes the membership (404)', async () => {
    const owner = (await accounts.signup('racer-owner@example.com', 'correct horse battery', '127.0.0.1')).user;
    const org = await orgs.create(owner.id, 'Racing');
    const invitee = (await accounts.signup('racer@example.com', 'correct horse battery', '127.0.0.1')).user;
    const inv = await invitations.invite(owner, invitee.email, 'member');
    records.revokeFirst = org.id;
    await assert.rejects(invitations.accept(invitee.id, inv.id), (err: Error & { code?: string }) => err.code === 'not_found');
    assert.equal(await orgs.membershipOf(invitee.id), null);
    assert.equal((await orgs.listMembers(owner.id)).length, 1);
  });
});
