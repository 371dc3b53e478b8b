// Voice batches wired once (src/voice/compose.ts calls it): the rows' collection, the calls as a
// batch places and reads them (VoiceCalls.create, the call actors' views), the batch actor's kind
// and the service. Registering the kind stays in the composition, with every other kind.
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Store } from '../../store/port.ts';
import type { ActorRuntime } from '../../actors/runtime.ts';
import type { BillingService } from '../../billing/service.ts';
import type { ModelCatalog } from '../../models/catalog.ts';
import type { AccountEvent, EventSink } from '../../shared/events.ts';
import type { VoiceCalls } from '../service.ts';
import type { CheckDeps } from '../checks.ts';
import { IdempotencyKeys } from '../idempotency.ts';
import type { AccountLimits } from '../../identity/account-limits.ts';
import { BatchRows } from './rows.ts';
import { batchCalls } from './calls.ts';
import { BATCH_KIND, voiceBatchKind, type BatchKind } from './kind.ts';
import { VoiceBatches } from './service.ts';

export interface BatchParts {
  service: VoiceBatches;
  kind: BatchKind;
}

export interface BatchDeps {
  config: Config;
  store: Store;
  actors: ActorRuntime;
  billing: Pick<BillingService, 'payerFor'>;
  models: Pick<ModelCatalog, 'resolve'>;
  events: EventSink;
  logger: Logger;
  now(): number;
  voice: VoiceCalls;
  /** The call checks' dependencies (the voice service's): a batch's template is checked as a call is. */
  checkDeps: CheckDeps;
  accountLimits: AccountLimits;
  /** Hears each account event once written: a top-up wakes the account's batches paused for credit at once (else their next re-check). */
  onEvent?: (listen: (e: AccountEvent) => void) => void;
}

export async function composeBatches(deps: BatchDeps): Promise<BatchParts> {
  const vc = deps.config.voice;
  const rows = new BatchRows(deps.store);
  await rows.init();
  // The calls' own idempotency records (a batch's attempt keys live there, per account).
  const keys = new IdempotencyKeys(deps.store, deps.now);
  const payerFor = (principal: Parameters<BillingService['payerFor']>[0]) => deps.billing.payerFor(principal);
  const models = { resolve: (id: string, type: 'voice', account: string) => deps.models.resolve(id, type, account) };
  // Wake-ups (the polls and re-checks stay the rule; these only shorten the wait): the batch whose
  // call ended, and an account's batches paused for credit when it is topped up.
  const nudge = (id: string) =>
    void deps.actors
      .ref(kind, id)
      .send({ type: 'nudge', now: deps.now() }, { wait: 'accepted' })
      .catch(() => undefined);
  const calls = batchCalls({ voice: deps.voice, runtime: deps.actors, keys, check: deps.checkDeps, payerFor, models }, nudge);
  const kind = voiceBatchKind({
    rows,
    calls,
    events: deps.events,
    now: deps.now,
    retainMs: vc.retentionDays * 86_400_000,
    logger: deps.logger.child({ component: 'voice-batches' }),
  });
  const service = new VoiceBatches({
    runtime: deps.actors,
    kind,
    rows,
    keys,
    check: deps.checkDeps,
    models,
    payerFor,
    maxConcurrentCalls: async (account) => (await deps.accountLimits.get(account)).voice_max_concurrent_calls,
    defaultMaxConcurrent: vc.maxConcurrentCalls,
    timing: vc.batches,
    call: (account, id) => deps.voice.get(account, id),
    now: deps.now,
  });
  deps.onEvent?.((e) => {
    if (e.event === 'topup') {
      void deps.actors
        .list(BATCH_KIND, { account: `${e.owner.type}:${e.owner.id}`, status: 'paused' })
        .then((paused) => paused.forEach((b) => nudge(b.id)))
        .catch(() => undefined);
    }
  });
  return { service, kind };
}
