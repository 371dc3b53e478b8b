// The durable outbox: the EventSink every service emits account events through. `emit` writes one
// outbox document per subscribed, enabled endpoint of the event's account, or for the one endpoint
// the event names (`webhookId`), holding the exact bytes to send, with a unique event id; then it
// wakes those endpoints' actors in the background; the caller
// waits for the write, never for a delivery. A periodic sweep (and one at start) wakes the actors
// of events left queued by a crash, a lost wake-up or another instance.
//
// Bounded: at most `maxQueuedPerEndpoint` events wait per endpoint; beyond it an event is dropped
// for that endpoint, counted in metrics and written to its delivery log.
import type { Logger } from 'pino';
import { ActorNotFoundError, RuntimeStoppedError } from '../actors/errors.ts';
import type { EndpointRef } from './kind.ts';
import type { Clock } from '../shared/common.ts';
import type { AccountEvent, EventSink } from '../shared/events.ts';
import type { WebhookDeliverer, WebhookMetrics } from './deliverer.ts';
import { eventBody, newEventId, type OutboxDoc, type WebhookCollections, type WebhookDoc } from './records.ts';

export interface OutboxOptions {
  maxPerAccount: number;
  maxQueuedPerEndpoint: number;
  sweepIntervalMs: number;
  batchSize: number;
}

export class WebhookOutbox implements EventSink {
  private timer: NodeJS.Timeout | null = null;
  private sweeping = false;
  private stopped = false;
  private readonly background = new Set<Promise<unknown>>();
  /** Queue lengths per endpoint, counted in the store at most once a second (a count walks the queue). */
  private readonly counts = new Map<number, { n: number; at: number }>();

  constructor(
    private readonly c: WebhookCollections,
    private readonly endpoint: EndpointRef,
    private readonly deliverer: WebhookDeliverer,
    private readonly metrics: WebhookMetrics,
    private readonly options: OutboxOptions,
    private readonly now: Clock,
    private readonly log: Logger,
  ) {}

  async emit(event: AccountEvent): Promise<void> {
    // Scalars only: a call's transcript (what the callee said, the keys pressed) stays out of the log.
    const logged = Object.fromEntries(Object.entries(event.fields).filter(([, v]) => v === null || typeof v !== 'object'));
    this.log.info({ account_event: event.event, owner: event.owner, fields: logged }, 'account event');
    const hooks = await this.c.webhooks.find({ owner: `${event.owner.type}:${event.owner.id}` }, { limit: this.options.maxPerAccount * 2 });
    // An event for one named endpoint goes there only (if it is still the account's), subscribed or not.
    const subscribed = hooks.filter((h) => (event.webhookId === undefined ? h.events.includes(event.event) : h._id === event.webhookId));
    if (subscribed.length === 0) return;
    const enabled = (await Promise.all(subscribed.map(async (h) => ((await this.isEnabled(h)) ? h : null)))).filter((h): h is WebhookDoc => h !== null);
    if (enabled.length === 0) return;

    const nowMs = this.now();
    const eventId = newEventId(nowMs);
    const body = eventBody(eventId, event.event, Math.floor(nowMs / 1000), event.fields);
    const queued: OutboxDoc[] = [];
    for (const h of enabled) {
      const waiting = await this.queued(h._id);
      if (waiting >= this.options.maxQueuedPerEndpoint) {
        this.metrics.dropped.inc({ reason: 'queue_full' });
        this.log.warn({ webhook_id: h._id, event_id: eventId, waiting }, 'webhook queue full: event dropped for this endpoint');
        await this.deliverer.logDropped(h._id, [{ event_id: eventId, event: event.event }], 'queue_full');
        continue;
      }
      this.counts.get(h._id)!.n += 1;
      queued.push({ _id: `${h._id}:${eventId}`, webhook_id: h._id, event_id: eventId, event: event.event, body, created_at: new Date(nowMs) });
    }
    if (queued.length === 0) return;
    await this.c.outbox.insertMany(queued);
    for (const item of queued) this.inBackground(this.wake(item.webhook_id).catch((err: unknown) => this.quiet(err, item.webhook_id)));
  }

  /** Tells the endpoint's actor that events wait (re-creating an actor lost before its first write). */
  async wake(webhookId: number): Promise<void> {
    await this.endpoint(webhookId).sendOrSpawn({ webhookId, batchSize: this.options.batchSize }, { type: 'outbox.ready' });
  }

  /** Wakes the endpoints with events queued for more than a moment (missed wake-ups, crashes). */
  async sweep(graceMs = 1000): Promise<void> {
    if (this.sweeping || this.stopped) return;
    this.sweeping = true;
    try {
      const stale = await this.c.outbox.find(
        { created_at: { $lte: new Date(this.now() - graceMs) } },
        { sort: { created_at: 1 }, limit: 1000, projection: { webhook_id: 1 } },
      );
      const ids = [...new Set(stale.map((d) => d.webhook_id))];
      await Promise.all(ids.map((id) => this.wake(id).catch((err: unknown) => this.quiet(err, id))));
    } finally {
      this.sweeping = false;
    }
  }

  start(): void {
    this.inBackground(this.sweep(0));
    this.timer ??= setInterval(() => this.inBackground(this.sweep()), this.options.sweepIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.background]);
  }

  /**
   * How many events wait for the endpoint: counted in the store, then for a second this process's
   * own additions are added to that count (deliveries meanwhile are not subtracted, so the bound errs
   * on the side of dropping early, never late, for one second's worth of events).
   */
  private async queued(webhookId: number): Promise<number> {
    const nowMs = this.now();
    const cached = this.counts.get(webhookId);
    if (cached && nowMs - cached.at < 1000) return cached.n;
    const n = await this.c.outbox.countDocuments({ webhook_id: webhookId });
    if (this.counts.size > 10_000) this.counts.clear();
    this.counts.set(webhookId, { n, at: nowMs });
    return n;
  }

  private async isEnabled(h: WebhookDoc): Promise<boolean> {
    try {
      const view = await this.endpoint(h._id).get();
      return view.status === 'active' && typeof view.value === 'object' && view.value !== null && 'enabled' in view.value;
    } catch (err) {
      if (err instanceof ActorNotFoundError) return true; // created, actor not written yet: wake() makes it
      throw err;
    }
  }

  private quiet(err: unknown, webhookId: number): void {
    if (err instanceof RuntimeStoppedError) return;
    this.log.debug({ err, webhook_id: webhookId }, 'webhook wake-up failed; the next sweep retries');
  }

  private inBackground(work: Promise<unknown>): void {
    const tracked = work.catch((err: unknown) => this.log.warn({ err }, 'webhook outbox background task failed'));
    this.background.add(tracked);
    void tracked.finally(() => this.background.delete(tracked));
  }
}
