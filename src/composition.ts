// The composition of the domain: every service wired once, and every actor kind registered with
// the runtime (webhook endpoints, intent sessions, transcription jobs, realtime sessions), here and
// nowhere else. src/server.ts calls createServices once, after building the store and the actor
// runtime and before starting the runtime; the HTTP and WebSocket edges get the services it returns.
import { CONFIG_DIR, SPEECH_BACKGROUND_FILE, type Config } from './config.ts';
import type { Store } from './store/port.ts';
import { AccountService } from './identity/accounts.ts';
import type { Clock } from './shared/common.ts';
import type { AccountEvent, EventSink } from './shared/events.ts';
import { KeyService } from './identity/keys.ts';
import { OperatorSessions } from './identity/operator-sessions.ts';
import { OrgService } from './identity/orgs.ts';
import { InvitationRecords } from './identity/invitation-records.ts';
import { InvitationService } from './identity/invitations.ts';
import { identityDirectory } from './identity/directory.ts';
import type { AccountWallets } from './identity/account-wallets.ts';
import { BillingPortal } from './billing/portal.ts';
import { BillingService } from './billing/service.ts';
import { Meter } from './metering/meter.ts';
import { ModelCatalog } from './models/catalog.ts';
import { UpstreamHttp } from './providers/http.ts';
import { UpstreamFiles } from './providers/upload.ts';
import { createProviders, isProviderName, PROVIDER_NAMES } from './providers/index.ts';
import { UpstreamRouter } from './providers/router.ts';
import { RouteResolver } from './providers/routes.ts';
import { ChatGateway } from './text/chat.ts';
import { opaqueIds } from './metering/endpoints.ts';
import { EmbeddingsGateway } from './text/embeddings.ts';
import { SyncTranscription } from './transcription/sync.ts';
import { SpeechSynthesis } from './synthesis/service.ts';
import { diarizeSource } from './speech/diarize.ts';
import { transcriptionJobKind } from './transcription/kind.ts';
import { TranscriptionJobs } from './transcription/jobs.ts';
import type { ActorRuntime } from './actors/runtime.ts';
import { createHmac } from 'node:crypto';
import { availableParallelism } from 'node:os';
import type { BlobStore } from './blobs/port.ts';
import { IntentService, type IntentMetrics } from './intent/service.ts';
import type { VoiceMetrics } from './voice/turn-stages.ts';
import { EnginePool } from './speech/engine-pool.ts';
import { LanguageModels } from './speech/language-models.ts';
import { intentSessionKind } from './intent/kind.ts';
import { PackRegistry, readPackFile } from './intent/packs.ts';
import { Webhooks, type WebhookService } from './webhooks/index.ts';
import type { WebhookMetrics } from './webhooks/deliverer.ts';
import { realtimeSessionKind } from './realtime/kind.ts';
import { RealtimeService, type RealtimeServiceDeps } from './realtime/service.ts';
import { loadVoiceDetectors, type VoiceDetectors } from './speech/vad.ts';
import { loadResamplers, type Resamplers } from './speech/resample.ts';
import { startPocketsphinxEngine } from './speech/pocketsphinx-engine.ts';
import type { Logger } from 'pino';
import { composeVoice } from './voice/compose.ts';
import type { VoiceBatches } from './voice/batches/service.ts';
import type { AccountLimits } from './identity/account-limits.ts';
import type { VoiceCalls } from './voice/service.ts';
import type { InboundCalls } from './voice/inbound.ts';

/** What /admin/actors reads: the actor runtime's view of one actor (rejects with code not_found). */
export interface ActorDirectory {
  get(kind: string, id: string): Promise<object>;
}

export interface Services {
  store: Store;
  /** stt-local's warm engines (src/speech/engine-pool.ts): closed at shutdown. */
  engines: EnginePool;
  /** Uploaded recordings and transcripts (src/blobs/). */
  blobs: BlobStore;
  accounts: AccountService;
  /** The dashboard's operator sessions (the admin token exchanged for a cookie). */
  operatorSessions: OperatorSessions;
  orgs: OrgService;
  invitations: InvitationService;
  keys: KeyService;
  billing: BillingService;
  /** The portal's and operators' billing: wallet, usage and subscription views, top-ups, KYC (on billing's parts). */
  billingPortal: BillingPortal;
  meter: Meter;
  events: EventSink;
  actors: ActorDirectory;
  models: ModelCatalog;
  /** Pooled upstream HTTP (closed on shutdown), the failover router, and the metered endpoints. */
  upstream: UpstreamHttp;
  /** Pooled uploads of audio to speech providers (closed on shutdown). */
  upstreamFiles: UpstreamFiles;
  router: UpstreamRouter;
  chat: ChatGateway;
  embeddings: EmbeddingsGateway;
  /** POST /v1/audio/transcriptions (src/transcription/). */
  transcription: SyncTranscription;
  /** The transcription jobs endpoints; their actor kind is in `kinds`. */
  transcriptionJobs: TranscriptionJobs;
  /** POST /v1/audio/speech (src/synthesis/). */
  speech: SpeechSynthesis;
  /** POST /v1/understand, and the intent packs it classifies with. */
  intent: IntentService;
  intentPacks: PackRegistry;
  webhooks: WebhookService;
  /** The webhook subsystem's lifecycle: start() after the runtime started, close() before it stops. */
  webhookDelivery: Webhooks;
  /** WS /v1/audio/transcriptions/stream (src/realtime/); its actor kind is in `kinds`. */
  realtime: RealtimeService;
  /** POST /v1/voice/call and the calls (src/voice/); the media streams' edge is src/ws/voice.ts. */
  voice: VoiceCalls;
  /** Voice batches: campaigns of calls paced by their actor (src/voice/batches/). */
  voiceBatches: VoiceBatches;
  /** Inbound calls to the numbers voice models own, and the numbers (src/voice/inbound.ts). */
  inbound: InboundCalls;
  /** Limits an operator set on one account over the defaults (PATCH /admin/limits/…). */
  accountLimits: AccountLimits;
}

export async function createServices(deps: {
  config: Config;
  store: Store;
  blobs: BlobStore;
  keySecret: string;
  /** The actor runtime, not started yet: every kind is registered with it here. */
  actors: ActorRuntime;
  /** Also told every account event (tests); the webhook outbox always is. */
  events?: EventSink;
  /** Where routes' api_key_env names are looked up (the composition root passes process.env). */
  upstreamEnv: Readonly<Record<string, string | undefined>>;
  /** The gateway's log; each subsystem gets a child of its own (`component`). */
  logger: Logger;
  /** Webhook delivery counters (src/http/metrics.ts). */
  webhookMetrics: WebhookMetrics;
  /** Intent turn counters (src/http/metrics.ts); none in tests that do not read them. */
  intentMetrics?: IntentMetrics;
  /** This process's name (src/server.ts), for billing's instance lease. */
  instanceId?: string;
  /** Voice turns' histograms (src/voice/turn-stages.ts); none in tests that do not read them. */
  voiceMetrics?: VoiceMetrics;
  /** The realtime sessions' counters. */
  realtimeMetrics?: RealtimeServiceDeps['metrics'];
  /** The gateway's tmp area (src/shared/tmp-area.ts): the offline engines keep the audio they work on there. */
  tmpDir: string;
  /** The address the gateway listens on, once it does (carriers' media streams, when voice.publicUrl is empty). */
  listenUrl?: () => string;
  now?: Clock;
}): Promise<Services> {
  const now = deps.now ?? Date.now;
  const webhooks = new Webhooks({
    config: deps.config.webhooks,
    store: deps.store,
    runtime: deps.actors,
    metrics: deps.webhookMetrics,
    logger: deps.logger.child({ component: 'webhooks' }),
    now,
  });
  // Account events go to the webhook outbox (durable); a caller's sink (tests) also sees each one.
  const extra = deps.events;
  const outbox: EventSink = extra ? { emit: async (e) => void (await Promise.all([webhooks.sink.emit(e), extra.emit(e)])) } : webhooks.sink;
  // In-process listeners hear each event once it is in the outbox (voice batches: a call ended, a top-up).
  const heard: ((e: AccountEvent) => void)[] = [];
  const events: EventSink = {
    emit: async (e) => {
      await outbox.emit(e);
      for (const listen of heard) listen(e);
    },
  };
  // Accounts and organizations open and close their wallets through billing, and billing reads people
  // through identity (src/identity/directory.ts): identity is built first and reaches billing, built
  // below, through these forwarders (called only once requests run).
  const wallets: AccountWallets = {
    openWallet: (owner, at) => billing.openWallet(owner, at),
    walletCents: (owner) => billing.walletCents(owner),
    closeWallet: (owner) => billing.closeWallet(owner),
  };
  const accounts = new AccountService(deps.store, deps.config.auth, wallets, now);
  const invitationRecords = new InvitationRecords(deps.store, deps.config.orgs.invitations.ttlHours * 3_600_000, now);
  const orgs = new OrgService(deps.store, accounts, deps.config.orgs, invitationRecords, wallets, now);
  const invitations = new InvitationService(deps.store, invitationRecords, orgs, accounts, deps.config.orgs.invitations, now);
  const keys = new KeyService(deps.store, deps.keySecret, deps.config.keys, events, now);
  await accounts.init();
  await orgs.init();
  await invitations.init();
  await keys.init();
  const operatorSessions = new OperatorSessions(deps.store, now);
  await operatorSessions.init();
  const spikes = webhooks.usageSpikes(events);
  // The embedded store has one owner, this process: what another instance left on it is a dead one's.
  const identity = identityDirectory(accounts, orgs);
  const billing = new BillingService({
    store: deps.store,
    identity,
    config: deps.config.billing,
    events,
    now,
    onUsageRecords: spikes.observe,
    soleOwner: deps.store.kind === 'embedded',
    ...(deps.instanceId ? { instance: deps.instanceId } : {}),
  });
  await billing.init();
  const billingPortal = new BillingPortal({ billing, identity, now });
  const models = new ModelCatalog(deps.store, PROVIDER_NAMES, now);
  await models.seed(deps.config.models);
  await webhooks.init();
  const upstream = new UpstreamHttp({ streamIdleTimeoutMs: deps.config.upstream.streamIdleTimeoutMs });
  const upstreamFiles = new UpstreamFiles();
  // stt-local's warm engines for utterances (a call's turns): one per core, as many as can run at once,
  // each with the conversations' language models built so far (a call's pack's, prepared at its start).
  const languageModels = new LanguageModels({
    dir: deps.tmpDir,
    backgroundFile: SPEECH_BACKGROUND_FILE,
    ...(deps.config.transcription.languageModelCacheDir ? { cacheDir: deps.config.transcription.languageModelCacheDir } : {}),
    log: deps.logger.child({ component: 'language-models' }),
  });
  const engines = new EnginePool({
    size: Math.max(1, availableParallelism()),
    // N best written: a call's turn is answered from the first of its readings the agent understands.
    start: () => startPocketsphinxEngine({ tmpDir: deps.tmpDir, models: languageModels.current(), nbest: true }),
  });
  const providers = createProviders(upstream, { files: upstreamFiles, local: { diarizer: diarizeSource, tmpDir: deps.tmpDir, engines, languageModels } });
  const router = new UpstreamRouter(providers, { now, logger: deps.logger.child({ component: 'router' }) });
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
  const tx = deps.config.transcription;
  const callbackToken = (jobId: string) => createHmac('sha256', deps.keySecret).update(`transcription-callback:${jobId}`).digest('base64url');
  const jobKind = transcriptionJobKind({
    blobs: deps.blobs,
    meter,
    models,
    providers,
    resolveRoutes: gatewayDeps.resolveRoutes,
    router,
    events,
    now,
    pollMs: tx.pollMs,
    maxPollMs: tx.maxPollMs,
    capacity: tx.capacity,
    maxAudioSeconds: tx.maxAudioMinutes * 60,
    holdTtlMs: tx.maxJobHours * 3_600_000,
    retainMs: tx.retentionDays * 86_400_000,
    ...(tx.publicUrl
      ? {
          callbackUrl: (provider: string, jobId: string) => ({
            url: `${tx.publicUrl.replace(/\/+$/, '')}/v1/audio/transcriptions/jobs/${jobId}/callback/${provider}`,
            token: callbackToken(jobId),
          }),
        }
      : {}),
  });
  const transcriptionJobs = new TranscriptionJobs({
    blobs: deps.blobs,
    meter,
    runtime: deps.actors,
    kind: jobKind,
    resolveRoutes: gatewayDeps.resolveRoutes,
    now,
    holdTtlMs: tx.maxJobHours * 3_600_000,
    maxAudioSeconds: tx.maxAudioMinutes * 60,
    providers,
    callbackToken,
  });
  const rt = deps.config.realtime;
  const realtimeKind = realtimeSessionKind({
    meter,
    now,
    checkpointMs: rt.checkpointMs,
    holdTtlMs: rt.tickMaxAgeMs * 2 + 60_000,
    retainMs: rt.retentionDays * 86_400_000,
  });
  // The speech WASM modules, loaded once on first use and shared by every socket.
  let detectors: Promise<VoiceDetectors> | null = null;
  let resamplers: Promise<Resamplers> | null = null;
  const realtime = new RealtimeService({
    meter,
    runtime: deps.actors,
    kind: realtimeKind,
    router,
    resolveRoutes: gatewayDeps.resolveRoutes,
    realtimeOf: (provider) => (isProviderName(provider) ? providers.get(provider)?.realtime : undefined),
    detectors: () => (detectors ??= loadVoiceDetectors()),
    resamplers: () => (resamplers ??= loadResamplers()),
    // N best written, so an utterance may be heard with its session's prompt (nbest.ts).
    startEngine: () => startPocketsphinxEngine({ tmpDir: deps.tmpDir, nbest: true }),
    settings: {
      ...rt,
      maxUtteranceMs: rt.maxUtteranceSeconds * 1000,
      holdTtlMs: rt.tickMaxAgeMs * 2 + 60_000,
    },
    logger: deps.logger.child({ component: 'realtime' }),
    ...(deps.realtimeMetrics ? { metrics: deps.realtimeMetrics } : {}),
    now,
  });
  const intent = new IntentService({
    ...gatewayDeps,
    packs: intentPacks,
    sessions: (id) => deps.actors.ref(intentSessionKind, id),
    sessionIdleMs: deps.config.intent.sessionIdleMinutes * 60_000,
    ...(deps.intentMetrics ? { metrics: deps.intentMetrics } : {}),
  });
  // Outbound and inbound calls, their carriers, transcripts and recordings (src/voice/compose.ts).
  const {
    voice,
    inbound,
    accountLimits,
    kind: voiceKind,
    batches,
  } = await composeVoice({
    ...{ config: deps.config, store: deps.store, blobs: deps.blobs, keySecret: deps.keySecret, actors: deps.actors, logger: deps.logger, now },
    ...{ meter, events, models, router, resolveRoutes: gatewayDeps.resolveRoutes, intent, webhooks, billing, identity, languageModels },
    onEvent: (listen) => void heard.push(listen),
    detectors: () => (detectors ??= loadVoiceDetectors()),
    resamplers: () => (resamplers ??= loadResamplers()),
    ...(deps.voiceMetrics ? { voiceMetrics: deps.voiceMetrics } : {}),
    ...(deps.listenUrl ? { listenUrl: deps.listenUrl } : {}),
    env: deps.upstreamEnv,
  });
  // Every actor kind, registered before the runtime starts (and restores what it stored). Intent
  // sessions past their inactivity expiry are reset anyway; the sweep then deletes them from the store.
  deps.actors.register({ ...intentSessionKind, expireIdleMs: deps.config.intent.sessionIdleMinutes * 60_000 });
  deps.actors.register(webhooks.kind);
  deps.actors.register(jobKind);
  deps.actors.register(realtimeKind);
  deps.actors.register(voiceKind);
  deps.actors.register(batches.kind);
  return {
    engines,
    realtime,
    voice,
    voiceBatches: batches.service,
    inbound,
    accountLimits,
    transcriptionJobs,
    store: deps.store,
    blobs: deps.blobs,
    accounts,
    operatorSessions,
    orgs,
    invitations,
    keys,
    billing,
    billingPortal,
    meter,
    events,
    actors: deps.actors,
    models,
    upstream,
    upstreamFiles,
    router,
    chat: new ChatGateway(gatewayDeps),
    embeddings: new EmbeddingsGateway(gatewayDeps),
    transcription: new SyncTranscription({ ...gatewayDeps, blobs: deps.blobs }),
    speech: new SpeechSynthesis({ ...gatewayDeps, resamplers: () => (resamplers ??= loadResamplers()) }),
    intent,
    intentPacks,
    webhooks: webhooks.portal((userId) => billing.accountOf(userId)),
    webhookDelivery: webhooks,
  };
}
