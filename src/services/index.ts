// The services the HTTP layer calls. Built once in src/server.ts (or a test's helper) and passed in.
import { CONFIG_DIR, type Config } from '../config.ts';
import type { Store } from '../store/port.ts';
import { AccountService } from './accounts.ts';
import type { Clock } from './common.ts';
import type { EventSink } from './events.ts';
import { KeyService } from './keys.ts';
import { OrgService } from './orgs.ts';
import { BillingService } from '../billing/service.ts';
import { Meter } from '../metering/meter.ts';
import { ModelCatalog } from '../models/catalog.ts';
import { UpstreamHttp } from '../providers/http.ts';
import { createProviders, PROVIDER_NAMES } from '../providers/index.ts';
import { RouteResolver, UpstreamRouter, type RouterLogger } from '../providers/router.ts';
import { ChatGateway } from '../gateway/chat.ts';
import { opaqueIds } from '../gateway/common.ts';
import { EmbeddingsGateway } from '../gateway/embeddings.ts';
import { IntentService, type ActorMessenger, type IntentMetrics } from '../intent/service.ts';
import { PackRegistry, readPackFile } from '../intent/packs.ts';
import type { Webhooks, WebhookService } from '../webhooks/index.ts';

/** What /admin/actors reads: the actor runtime's view of one actor (rejects with code not_found). */
export interface ActorDirectory {
  get(kind: string, id: string): Promise<object>;
}

export interface Services {
  store: Store;
  accounts: AccountService;
  orgs: OrgService;
  keys: KeyService;
  billing: BillingService;
  meter: Meter;
  events: EventSink;
  actors: ActorDirectory;
  models: ModelCatalog;
  /** Pooled upstream HTTP (closed on shutdown), the failover router, and the metered endpoints. */
  upstream: UpstreamHttp;
  router: UpstreamRouter;
  chat: ChatGateway;
  embeddings: EmbeddingsGateway;
  /** POST /v1/understand, and the intent packs it classifies with. */
  intent: IntentService;
  intentPacks: PackRegistry;
  webhooks: WebhookService;
}

export async function createServices(deps: {
  config: Config;
  store: Store;
  keySecret: string;
  events: EventSink;
  actors: ActorDirectory & ActorMessenger;
  /** The webhook subsystem (src/server.ts builds it: its outbox is usually `events`). */
  webhooks: Webhooks;
  /** Where routes' api_key_env names are looked up (the composition root passes process.env). */
  upstreamEnv: Readonly<Record<string, string | undefined>>;
  routerLogger?: RouterLogger;
  /** Intent turn counters (src/http/metrics.ts); none in tests that do not read them. */
  intentMetrics?: IntentMetrics;
  /** This process's name (src/server.ts), for billing's instance lease. */
  instanceId?: string;
  now?: Clock;
}): Promise<Services> {
  const now = deps.now ?? Date.now;
  const accounts = new AccountService(deps.store, deps.config.auth, now);
  const orgs = new OrgService(deps.store, accounts, deps.config.orgs, now);
  const keys = new KeyService(deps.store, deps.keySecret, deps.config.keys, deps.events, now);
  await accounts.init();
  await orgs.init();
  await keys.init();
  const spikes = deps.webhooks.usageSpikes(deps.events);
  // The embedded store has one owner, this process: what another instance left on it is a dead one's.
  const billing = new BillingService({ store: deps.store, config: deps.config.billing, events: deps.events, now, onUsageRecords: spikes.observe, soleOwner: deps.store.kind === 'embedded', ...(deps.instanceId ? { instance: deps.instanceId } : {}) });
  await billing.init();
  const models = new ModelCatalog(deps.store, PROVIDER_NAMES, now);
  await models.seed(deps.config.models);
  await deps.webhooks.init();
  const upstream = new UpstreamHttp();
  const router = new UpstreamRouter(createProviders(upstream), { now, ...(deps.routerLogger ? { logger: deps.routerLogger } : {}) });
  const intentPacks = new PackRegistry(deps.store, now);
  await intentPacks.seed(deps.config.intent.packs.map((file) => readPackFile(file, CONFIG_DIR)));
  const routes = new RouteResolver(deps.upstreamEnv);
  // Every metered call goes through the one Meter (src/metering/meter.ts).
  const meter = new Meter({ billing, models, assertKyc: (payer, requiresKyc) => billing.assertKyc(payer, requiresKyc), now });
  const gatewayDeps = {
    meter,
    router,
    resolveRoutes: (model: Parameters<RouteResolver['routes']>[0]) => routes.routes(model),
    opaqueId: opaqueIds(deps.keySecret),
    now,
  };
  return {
    store: deps.store, accounts, orgs, keys, billing, meter, events: deps.events, actors: deps.actors, models,
    upstream, router, chat: new ChatGateway(gatewayDeps), embeddings: new EmbeddingsGateway(gatewayDeps),
    intent: new IntentService({
      ...gatewayDeps,
      packs: intentPacks,
      sessions: deps.actors,
      sessionIdleMs: deps.config.intent.sessionIdleMinutes * 60_000,
      ...(deps.intentMetrics ? { metrics: deps.intentMetrics } : {}),
    }),
    intentPacks,
    webhooks: deps.webhooks.portal((userId) => billing.accountOf(userId)),
  };
}
