// The composition root: config → logger → store → actor runtime → services and actor kinds
// (src/composition.ts wires them) → HTTP app → listen.
// Shutdown runs in reverse: stop accepting, let in-flight requests finish, persist and release the
// actors, flush and close the store.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createLogger } from './logger.ts';
import { resolveKeySecret } from './shared/secrets.ts';
import { openTmpArea } from './shared/tmp-area.ts';
import { isUnawaitedCommitFailure, openStore } from './store/index.ts';
import { DataDirLockError, lockDataDir } from './store/data-dir-lock.ts';
import { openBlobs, type BlobStore } from './blobs/index.ts';
import { createRuntimeMetrics } from './actors/metrics.ts';
import { ActorRuntime } from './actors/runtime.ts';
import { LocalWakeups, type Wakeups } from './actors/wakeups.ts';
import { StoreWakeups } from './actors/wakeups-store.ts';
import { createServices } from './composition.ts';
import type { EventSink } from './shared/events.ts';
import { buildApp } from './http/app.ts';
import type { App, Lifecycle } from './http/types.ts';
import { OpenStreams } from './http/open-streams.ts';
import { attachRealtimeEdge } from './ws/realtime.ts';
import { attachVoiceEdge, isVoiceStreamPath } from './ws/voice.ts';
import { TWILIO_WSS_WARNING, twilioCanStream } from './providers/twilio/voice.ts';
import { createMetrics } from './http/metrics.ts';
import { startMetricsServer, type MetricsServer } from './http/metrics-server.ts';
import type { Store } from './store/port.ts';

export interface Gateway {
  app: App;
  store: Store;
  /** Uploaded recordings, transcripts, audio: files in DATA_DIR/blobs, or GridFS on MongoDB. */
  blobs: BlobStore;
  runtime: ActorRuntime;
  /** http://host:port the gateway listens on. */
  url: string;
  /** http://host:port serving GET /metrics: its own listener, the API's (metrics.listen "api"), or '' (off, or not listening). */
  metricsUrl: string;
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  events?: EventSink;
  now?: () => number;
  /** Listen (default true); tests using app.inject may skip it. */
  listen?: boolean;
}

export async function startGateway(config: Config, opts: StartOptions = {}): Promise<Gateway> {
  const startedAt = performance.now();
  const logger = opts.logger ?? createLogger(config.logLevel);
  const keySecret = resolveKeySecret(config);
  const instanceId = config.instanceId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;

  // The embedded store's DATA_DIR is this process's alone (src/store/data-dir-lock.ts): taken
  // before anything in it is touched, so a second gateway started on it stops here.
  const dirLock = config.mongodbUrl ? null : await lockDataDir(config.dataDir);
  // Before anything runs: what a killed predecessor left in DATA_DIR/tmp (customer audio, an engine
  // spawned as it died) is swept, and this process gets its own folder there.
  const tmp = await openTmpArea(config.dataDir);
  if (tmp.swept.folders > 0)
    logger.info(
      { component: 'tmp', folders_removed: tmp.swept.folders, processes_killed: tmp.swept.processes },
      'swept what a dead gateway left in its tmp area',
    );
  const store = await openStore({
    mongodbUrl: config.mongodbUrl,
    dataDir: config.dataDir,
    ttlSweepMs: config.store.ttlSweepMs,
    onError: (err) =>
      logger.error({ err, component: 'store' }, 'store failure (a TTL sweep, or commits failing: new holds are refused until writes commit again)'),
  });
  const blobs = await openBlobs({ mongodbUrl: config.mongodbUrl, dataDir: config.dataDir, tmpDir: tmp.dir });
  const metrics = createMetrics();
  const actorLog = logger.child({ component: 'actors' });
  // Inbox wake-ups: in process on the embedded store (one process owns it); MongoDB's change stream
  // across instances. The runtime polls as well, so a missed wake-up only delays a message.
  const wakeups: Wakeups = store.kind === 'mongodb' ? new StoreWakeups(store, actorLog) : new LocalWakeups();
  const runtime: ActorRuntime = new ActorRuntime({
    store,
    logger: actorLog,
    instanceId,
    ...config.actors,
    wakeups,
    metrics: createRuntimeMetrics(metrics.registry, () => runtime.sample()),
    ...(opts.now ? { now: opts.now } : {}),
  });
  const lifecycle: Lifecycle & { actorsRestored: boolean } = {
    closing: false,
    actorsRestored: false,
    async ready() {
      const checks: Record<string, string> = {};
      try {
        await store.ping();
        checks.store = 'ok';
      } catch (err) {
        checks.store = `unreachable (${(err as Error).message})`;
      }
      checks.actors = this.actorsRestored ? 'ok' : 'restoring';
      if (this.closing) checks.lifecycle = 'shutting down';
      return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
    },
  };

  // Every service, and every actor kind registered with the runtime (src/composition.ts).
  let listenUrl = ''; // known once listening: the simulator carrier's media streams come back to it
  const services = await createServices({
    listenUrl: () => listenUrl,
    config,
    store,
    blobs,
    keySecret,
    actors: runtime,
    ...(opts.events ? { events: opts.events } : {}),
    instanceId,
    upstreamEnv: process.env,
    logger,
    webhookMetrics: { deliveries: metrics.webhookDeliveries, dropped: metrics.webhookDropped, disabled: metrics.webhookDisabled },
    realtimeMetrics: { sessions: metrics.realtimeSessions, chargedSeconds: metrics.realtimeChargedSeconds },
    intentMetrics: { turns: metrics.intentTurns, cascade: metrics.intentCascade },
    voiceMetrics: { stages: metrics.voiceTurnStages, latency: metrics.voiceTurnLatency, firstFrame: metrics.voiceFirstFrame },
    tmpDir: tmp.dir,
    ...(opts.now ? { now: opts.now } : {}),
  });
  const streams = new OpenStreams(config.http.streamStallTimeoutMs);
  const app = await buildApp({ config, logger, metrics, services, lifecycle, streams });
  // WS /v1/audio/transcriptions/stream: on the same server, authenticated before the upgrade.
  const realtimeEdge = attachRealtimeEdge(app.server, {
    keys: services.keys,
    billing: services.billing,
    realtime: services.realtime,
    limits: config.realtime,
    closing: () => lifecycle.closing,
    logger,
    ownsPath: isVoiceStreamPath,
  });
  // WS /v1/voice/calls/{id}/stream: the carriers' media streams of the calls held here.
  const voiceEdge = attachVoiceEdge(app.server, {
    voice: services.voice,
    maxPayloadBytes: config.voice.maxPayloadBytes,
    // A few seconds, and never past the media timeout: a stream not started by then serves no call.
    startTimeoutMs: Math.min(5000, config.voice.mediaTimeoutMs),
    closing: () => lifecycle.closing,
    logger,
  });

  await runtime.start();
  lifecycle.actorsRestored = true;
  services.webhookDelivery.start(); // wakes endpoints with queued events, then sweeps the outbox
  services.billing.start((err, what) => logger.error({ err, component: 'billing' }, what)); // usage flush, hold and renewal sweeps
  // Before serving: a crashed predecessor's holds returned (so its calls lock no money) and its usage written.
  const recovered = await services.billing.recoverDead();
  if (recovered.holds > 0 || recovered.records > 0)
    logger.info(
      { component: 'billing', holds_returned: recovered.holds, usage_records_written: recovered.records },
      'billing recovered what a dead instance left',
    );

  let url = '';
  let metricsServer: MetricsServer | null = null;
  if (opts.listen !== false) {
    const { listen, token } = config.metrics;
    if (listen !== 'api' && listen !== 'off') metricsServer = await startMetricsServer({ listen, token, registry: metrics.registry });
    url = await app.listen({ port: config.port, host: config.host });
    listenUrl = url;
  } else {
    await app.ready();
  }
  const metricsUrl = metricsServer?.url ?? (config.metrics.listen === 'api' ? url : '');
  logger.info(
    { url, metrics_url: metricsUrl, store: store.kind, instance_id: instanceId, start_ms: Math.round(performance.now() - startedAt) },
    'gateway started',
  );
  // Twilio streams a call's media over wss:// only: a model routing calls through it needs an https public base.
  const publicBase = config.voice.publicUrl || url;
  const twilioModels = (await services.models.list()).filter((m) => m.routes.some((r) => r.provider === 'twilio')).map((m) => m._id);
  if (twilioModels.length > 0 && !twilioCanStream(publicBase)) logger.warn({ models: twilioModels, public_base_url: publicBase }, TWILIO_WSS_WARNING);

  let closed: Promise<void> | null = null;
  const close = () =>
    (closed ??= (async () => {
      lifecycle.closing = true;
      realtimeEdge.close(); // no new sockets
      voiceEdge.close();
      await services.voice.close(); // live calls end (gateway_restart) and bill what was answered
      await services.realtime.close(); // open sockets get transcription_session.done and close 1001; their actors bill
      // Stops accepting and waits for in-flight requests, for the grace at most: then streams still
      // open are ended (their routes bill them) and any connection left is closed.
      const grace = config.http.shutdownGraceMs;
      const appClosed = app.close();
      const backstop = setTimeout(() => app.server.closeAllConnections(), grace);
      const stuck = await streams.close(grace);
      if (stuck > 0) logger.error({ streams: stuck }, 'streamed responses still running after their connections closed: shutting down without them');
      await appClosed;
      clearTimeout(backstop);
      await metricsServer?.close();
      await services.webhookDelivery.close(); // stops the outbox sweep; waits for deliveries in flight (at most 5 s)
      await runtime.stop(); // drains mailboxes, writes what is unsaved (charges made while finalizing included), releases leases
      await wakeups.close?.();
      await services.billing.close(); // then billing: stops the sweeps; writes the buffered usage records
      await services.router.close(); // stops the per-route limiters
      await services.upstream.close(); // closes pooled upstream connections
      await services.upstreamFiles.close(); // and the audio upload pool
      await blobs.close();
      await store.close(); // flushes what was acknowledged
      services.engines.close(); // stt-local's warm engines end
      await tmp.close(); // the engines are stopped: their folders go
      await dirLock?.release(); // last: another gateway may take DATA_DIR now
      logger.info('gateway stopped');
    })());
  return { app, store, blobs, runtime, url, metricsUrl, close };
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`gateway: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  let gateway: Gateway;
  try {
    gateway = await startGateway(config, { logger });
  } catch (err) {
    if (err instanceof ConfigError || err instanceof DataDirLockError) {
      process.stderr.write(`gateway: ${err.message}\n`);
      process.exit(2);
    }
    logger.fatal({ err }, 'gateway failed to start');
    process.exit(1);
  }
  let signals = 0;
  const shutdown = (signal: string) => {
    if (++signals > 1) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error('shutdown took longer than 30 s: exiting');
      process.exit(1);
    }, 30_000);
    force.unref();
    gateway.close().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  // lmdb-js leaves promises of a failed commit unawaited (src/store/embedded/commit-failures.ts):
  // on a full disk they must not end the process (the store reports the failure and billing fails
  // closed); any other unhandled rejection still does.
  process.on('unhandledRejection', (reason) => {
    if (isUnawaitedCommitFailure(reason)) return;
    throw reason;
  });
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  void main();
}
