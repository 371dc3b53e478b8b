// The webhook subsystem, composed once in src/composition.ts: the endpoint actor kind (which the
// composition registers with the runtime before it starts), the outbox sink the services emit
// account events through, the portal service, and their lifecycle (start the outbox sweep after the
// runtime; on close, stop the sweep and wait for the deliveries in flight before the runtime
// persists and releases the actors).
import type { Logger } from 'pino';
import type { ActorRuntime } from '../actors/runtime.ts';
import type { Config } from '../config.ts';
import type { Clock } from '../shared/common.ts';
import type { Store } from '../store/port.ts';
import type { AddressPolicy } from './address.ts';
import { WebhookDeliverer, type WebhookMetrics } from './deliverer.ts';
import { WebhookHttp } from './http.ts';
import { WebhookOutbox } from './outbox.ts';
import { webhookEndpointKind, type EndpointRef, type WebhookKind } from './kind.ts';
import { createWebhookIndexes, webhookCollections, type WebhookCollections } from './records.ts';
import { WebhookService, type WebhookAccount } from './service.ts';
import { UsageSpikeDetector } from './usage-spike.ts';
import type { EventSink } from '../shared/events.ts';

export type WebhooksConfig = Config['webhooks'];

export interface WebhooksDeps {
  config: WebhooksConfig;
  store: Store;
  runtime: ActorRuntime;
  metrics: WebhookMetrics;
  logger: Logger;
  now: Clock;
}

export class Webhooks {
  readonly sink: WebhookOutbox;
  readonly http: WebhookHttp;
  readonly deliverer: WebhookDeliverer;
  readonly collections: WebhookCollections;
  readonly policy: AddressPolicy;
  /** The endpoint actor kind; src/composition.ts registers it with the runtime. */
  readonly kind: WebhookKind;
  /** The actor of one endpoint. */
  readonly endpoint: EndpointRef;

  constructor(private readonly deps: WebhooksDeps) {
    const { config, store, runtime, metrics, logger, now } = deps;
    this.policy = { allowPrivateNetworks: config.allowPrivateNetworks, allowHttp: config.allowHttp };
    this.collections = webhookCollections(store);
    this.http = new WebhookHttp(this.policy, config.timeoutMs);
    this.deliverer = new WebhookDeliverer(this.collections, this.http, metrics, { deliveryLogSize: config.deliveryLogSize }, now, logger);
    const kind = (this.kind = webhookEndpointKind(this.deliverer));
    this.endpoint = (webhookId) => runtime.ref(kind, String(webhookId));
    this.sink = new WebhookOutbox(
      this.collections,
      this.endpoint,
      this.deliverer,
      metrics,
      {
        maxPerAccount: config.maxPerAccount,
        maxQueuedPerEndpoint: config.maxQueuedPerEndpoint,
        sweepIntervalMs: config.sweepIntervalMs,
        batchSize: config.batchSize,
      },
      now,
      logger,
    );
  }

  async init(): Promise<void> {
    await createWebhookIndexes(this.collections);
  }

  /** The portal operations; `accountOf` is the billing service's account rule. */
  portal(accountOf: (userId: number) => Promise<WebhookAccount>): WebhookService {
    const { config, store, now } = this.deps;
    return new WebhookService({
      store,
      collections: this.collections,
      endpoint: this.endpoint,
      http: this.http,
      deliverer: this.deliverer,
      policy: this.policy,
      maxPerAccount: config.maxPerAccount,
      batchSize: config.batchSize,
      accountOf,
      now,
    });
  }

  /** Whether webhook `id` is the account's ('user:<id>' | 'org:<id>'): a voice call names one for its events. */
  async owns(account: string, id: number): Promise<boolean> {
    return (await this.collections.webhooks.findOne({ _id: id }))?.owner === account;
  }

  /** Webhook `id`'s URL and signing secret when it is the account's (a voice call's tool requests are signed with it), else null. */
  async signerOf(account: string, id: number): Promise<{ url: string; secret: string } | null> {
    const hook = await this.collections.webhooks.findOne({ _id: id });
    return hook?.owner === account ? { url: hook.url, secret: hook.secret } : null;
  }

  /** The usage_spike detector, fed by the billing service's usage flush; emits through `events`. */
  usageSpikes(events: EventSink): UsageSpikeDetector {
    const { config, store, now, logger } = this.deps;
    return new UsageSpikeDetector(store, events, config.usageSpike, now, (err, what) => logger.warn({ err }, what));
  }

  /** After the actor runtime started: wakes endpoints with queued events, then sweeps periodically. */
  start(): void {
    this.sink.start();
  }

  /** Before the actor runtime stops. */
  async close(): Promise<void> {
    await this.sink.stop();
    await this.deliverer.close();
    await this.http.close();
  }
}

export { WebhookService } from './service.ts';
