// The voice subsystem wired once (src/composition.ts calls it): the call actor's kind, the
// carriers a model's routes dial through, the simulator, calls' transcripts and recordings, outbound
// calls (VoiceCalls) and inbound ones (InboundCalls). Registering the kind with the runtime stays in
// the composition, with every other kind.
import { createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Store } from '../store/port.ts';
import type { BlobStore } from '../blobs/port.ts';
import type { Clock } from '../shared/common.ts';
import type { AccountEvent, EventSink } from '../shared/events.ts';
import type { Meter } from '../metering/meter.ts';
import type { ModelCatalog } from '../models/catalog.ts';
import type { RouteConfig } from '../models/types.ts';
import type { BillingService } from '../billing/service.ts';
import type { IdentityDirectory } from '../identity/directory.ts';
import type { ActorRuntime } from '../actors/runtime.ts';
import { AccountLimits } from '../identity/account-limits.ts';
import type { IntentService } from '../intent/service.ts';
import type { Webhooks } from '../webhooks/index.ts';
import type { UpstreamRouter } from '../providers/router.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import type { Carrier } from '../providers/carrier.ts';
import { simulatorCarrier } from '../providers/simulator/voice.ts';
import { twilioCarrier } from '../providers/twilio/voice.ts';
import { exotelCarrier } from '../providers/exotel/voice.ts';
import type { LanguageModels } from '../speech/language-models.ts';
import { matchLanguage } from '../speech/languages.ts';
import type { VoiceDetectors } from '../speech/vad.ts';
import type { Resamplers } from '../speech/resample.ts';
import { voiceCallKind } from './kind.ts';
import { CallAnalyzer } from './analysis.ts';
import { VoiceCalls, type VoiceServiceDeps } from './service.ts';
import { ToolRequests } from './tool-requests.ts';
import { ToolJournal } from './tool-journal.ts';
import { InboundCalls, type InboundDeps } from './inbound.ts';
import { CallTranscripts } from './transcript.ts';
import { CallRecordings } from './recordings.ts';
import { ResponseAudio } from './agent.ts';
import type { VoiceMetrics } from './turn-stages.ts';
import { composeBatches, type BatchParts } from './batches/compose.ts';

export interface VoiceDeps {
  config: Config;
  store: Store;
  blobs: BlobStore;
  keySecret: string;
  /** The actor runtime the calls' actors run on. */
  actors: ActorRuntime;
  logger: Logger;
  now: Clock;
  meter: Meter;
  events: EventSink;
  models: ModelCatalog;
  router: UpstreamRouter;
  resolveRoutes: InboundDeps['resolveRoutes'];
  intent: IntentService;
  webhooks: Webhooks;
  billing: BillingService;
  identity: IdentityDirectory;
  languageModels: LanguageModels;
  detectors: () => Promise<VoiceDetectors>;
  resamplers: () => Promise<Resamplers>;
  voiceMetrics?: VoiceMetrics;
  /** The address the gateway listens on, once it does (carriers' media streams, when voice.publicUrl is empty). */
  listenUrl?: () => string;
  /** Where a voice model's `agent_tools.signing_secret_env` is looked up (the composition root passes process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Hears each account event once written (the batches wake on a call's end and a top-up). */
  onEvent?: (listen: (e: AccountEvent) => void) => void;
}

export interface VoiceParts {
  voice: VoiceCalls;
  inbound: InboundCalls;
  accountLimits: AccountLimits;
  /** The call actor's kind, for the composition to register with the runtime. */
  kind: ReturnType<typeof voiceCallKind>;
  /** Batches (campaigns) of calls and their actor's kind (src/voice/batches/). */
  batches: BatchParts;
}

export async function composeVoice(deps: VoiceDeps): Promise<VoiceParts> {
  // Outbound calls: the call actor, the response audio cache, and the carriers this build dials through.
  const vc = deps.config.voice;
  const { meter, events, now, models, router, intent, webhooks, billing, identity, languageModels } = deps;
  // Calls' transcripts: their own collection, out of the actors' snapshots (src/voice/transcript.ts).
  const transcripts = new CallTranscripts(deps.store, now);
  const recordings = new CallRecordings({
    ...{ store: deps.store, blobs: deps.blobs, dataDir: deps.config.dataDir, defaultRetentionDays: vc.retentionDays, now, resamplers: deps.resamplers },
    accountRetentionDays: async (account) => (await accountLimits.get(account)).recording_retention_days,
    logger: deps.logger.child({ component: 'voice-recordings' }),
  });
  // Calls' tool requests in flight (src/voice/tool-journal.ts): a restart records them `interrupted`.
  const toolJournal = new ToolJournal(deps.store, transcripts, now, deps.logger.child({ component: 'voice-tools' }));
  await toolJournal.init();
  // A call's analysis after its charge: an llm through the router, metered as a chat call (src/voice/analysis.ts).
  const analyzer = new CallAnalyzer({
    ...{ meter, models, router, resolveRoutes: deps.resolveRoutes, transcripts, events, now },
    ...{ attempts: vc.analysisAttempts, backoffMs: vc.analysisBackoffMs },
  });
  const voiceKind = voiceCallKind({
    analyzer,
    transcripts,
    toolJournal,
    recordings,
    meter,
    events,
    now,
    checkpointMs: vc.checkpointMs,
    retainMs: vc.retentionDays * 86_400_000,
    hangupOrphan: async (modelId, dialled) => {
      // `dialled` is `<route index>:<carrier's call id>` (src/voice/dialling.ts).
      const m = /^(\d+):(.+)$/.exec(dialled);
      const model = m ? await models.get(modelId) : null;
      const at = Number(m?.[1]);
      const config = model?.routes[at];
      const route = model ? deps.resolveRoutes(model)[at] : undefined;
      // The simulator's callee died with the process; a real carrier's call is hung up by its API.
      const carrier = m && config && route && config.provider !== 'simulator' ? carrierFor(config, route) : undefined;
      if (!carrier) return { carrierDurationSeconds: null };
      await carrier.hangup(m![2]!);
      return { carrierDurationSeconds: (await carrier.duration?.(m![2]!)) ?? null };
    },
  });
  const responseAudio = new ResponseAudio({ router, resolveRoutes: deps.resolveRoutes, resamplers: () => deps.resamplers() });
  const simulator = simulatorCarrier({
    callees: vc.simulator.callees,
    logger: deps.logger.child({ component: 'voice-simulator' }),
    // The callee's speech: tts-local (espeak-ng, or festival for `en-us-slt`), whatever the call's own tts model is.
    speak: async (text, voice) => {
      const tts = await models.get('tts-local');
      if (!tts) throw new Error('the simulator speaks through tts-local, which is not configured');
      const language = matchLanguage(voice, tts.languages ?? []);
      return responseAudio.render(tts, voice, language ?? undefined, text);
    },
  });
  const publicBase = () => (vc.publicUrl || (deps.listenUrl?.() ?? '')).replace(/\/+$/, '');
  const callbackUrl = (provider: string, id: string) => `${publicBase()}/v1/voice/calls/${id}/callback/${provider}`;
  // Exotel does not sign its callbacks: each call's callback URL carries a secret of its own.
  const voiceCallbackToken = (callId: string) => createHmac('sha256', deps.keySecret).update(`voice-callback:${callId}`).digest('base64url');
  const carrierLog = deps.logger.child({ component: 'voice-carrier' });
  // A route's carrier, when its configuration has what the carrier needs (the catalog checked it when the model was saved).
  const carrierFor = (config: RouteConfig, route: ResolvedRoute): Carrier | undefined => {
    if (config.provider === 'simulator') return simulator;
    if (config.provider === 'twilio' && config.account_sid && config.from) {
      return twilioCarrier(
        { baseUrl: route.baseUrl, accountSid: config.account_sid, authToken: route.apiKey, from: config.from },
        { callbackUrl: (id) => callbackUrl('twilio', id) },
      );
    }
    if (config.provider === 'exotel' && config.account_sid && config.from && config.api_token && route.apiKey) {
      return exotelCarrier(
        {
          baseUrl: route.baseUrl,
          accountSid: config.account_sid,
          apiKey: route.apiKey,
          apiToken: config.api_token,
          from: config.from,
          ...(config.app_id ? { appId: config.app_id } : {}),
        },
        { callbackUrl: (id) => `${callbackUrl('exotel', id)}?token=${voiceCallbackToken(id)}`, callbackToken: voiceCallbackToken, logger: carrierLog },
      );
    }
    return undefined;
  };
  const accountLimits = new AccountLimits(deps.store, now, (owner) => identity.exists(owner));
  const callDeps: VoiceServiceDeps = {
    meter,
    models,
    runtime: deps.actors,
    kind: voiceKind,
    store: deps.store,
    carrier: carrierFor,
    payerFor: (principal) => billing.payerFor(principal),
    available: (payer) => billing.availableMicrocents(payer.walletId),
    webhookOwned: (account, id) => webhooks.owns(account, id),
    signerOf: (account, id) => webhooks.signerOf(account, id),
    toolRequests: new ToolRequests(webhooks.policy),
    toolJournal,
    toolSecret: (name) => (deps.env && Object.hasOwn(deps.env, name) ? deps.env[name] || undefined : undefined),
    events,
    maxConcurrentCalls: async (account) => (await accountLimits.get(account)).voice_max_concurrent_calls,
    intent,
    audio: responseAudio,
    router,
    resolveRoutes: deps.resolveRoutes,
    detectors: () => deps.detectors(),
    resamplers: () => deps.resamplers(),
    baseUrl: publicBase,
    keySecret: deps.keySecret,
    transcripts,
    recordings,
    settings: vc, // what it reads of voice.*: maxConcurrentCalls, minAffordableSeconds, mediaTimeoutMs, toolTimeoutMs
    logger: deps.logger.child({ component: 'voice' }),
    ...(deps.voiceMetrics ? { metrics: deps.voiceMetrics } : {}),
    languageModels,
    now,
  };
  const voice = new VoiceCalls(callDeps);
  await voice.init();
  const inbound = new InboundCalls({
    resolveRoutes: deps.resolveRoutes,
    now,
    store: deps.store,
    models,
    simulator,
    voice,
    identity,
    baseUrl: publicBase,
    logger: deps.logger,
  });
  const batches = await composeBatches({ ...deps, voice, checkDeps: callDeps, accountLimits });
  return { voice, inbound, accountLimits, kind: voiceKind, batches };
}
