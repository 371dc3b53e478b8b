// The services the HTTP layer calls. Built once in src/server.ts (or a test's helper) and passed in.
import type { Config } from '../config.ts';
import type { Store } from '../store/port.ts';
import { AccountService } from './accounts.ts';
import type { Clock } from './common.ts';
import type { EventSink } from './events.ts';
import { KeyService } from './keys.ts';
import { OrgService } from './orgs.ts';

/** What /admin/actors reads: the actor runtime's view of one actor (rejects with code not_found). */
export interface ActorDirectory {
  get(kind: string, id: string): Promise<object>;
}

export interface Services {
  store: Store;
  accounts: AccountService;
  orgs: OrgService;
  keys: KeyService;
  events: EventSink;
  actors: ActorDirectory;
}

export async function createServices(deps: {
  config: Config;
  store: Store;
  keySecret: string;
  events: EventSink;
  actors: ActorDirectory;
  now?: Clock;
}): Promise<Services> {
  const now = deps.now ?? Date.now;
  const accounts = new AccountService(deps.store, deps.config.auth, now);
  const orgs = new OrgService(deps.store, accounts, deps.config.orgs, now);
  const keys = new KeyService(deps.store, deps.keySecret, deps.config.keys, deps.events, now);
  await accounts.init();
  await orgs.init();
  await keys.init();
  return { store: deps.store, accounts, orgs, keys, events: deps.events, actors: deps.actors };
}
