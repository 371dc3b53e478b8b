// The endpoint actor's effects: deliver a batch of its queued events, discard its queue, and the
// delivery log they write. Injected into the machine by src/webhooks/kind.ts.
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import type { DeliverBatchInput, DeliverBatchOutput } from '../../machines/webhook-endpoint.machine.ts';
import type { Clock } from '../shared/common.ts';
import type { WebhookHttp, DeliveryOutcome } from './http.ts';
import { deliveryId, type DeliveryDoc, type OutboxDoc, type WebhookCollections } from './records.ts';

export interface WebhookMetrics {
  /** Delivery attempts by outcome (`ok`, `failed`). */
  deliveries: Counter<'outcome'>;
  /** Events accepted but never attempted, by reason (`queue_full`, `endpoint_disabled`, `endpoint_removed`). */
  dropped: Counter<'reason'>;
  /** Automatic disablings (10 consecutive failures). */
  disabled: Counter<string>;
}

export interface DelivererOptions {
  deliveryLogSize: number;
}

export class ShuttingDownError extends Error {
  override name = 'ShuttingDownError';
}

export class WebhookDeliverer {
  private closing = false;
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(
    private readonly c: WebhookCollections,
    private readonly http: WebhookHttp,
    private readonly metrics: WebhookMetrics,
    private readonly options: DelivererOptions,
    private readonly now: Clock,
    private readonly log: Logger,
  ) {}

  /** Sends up to `max` of the endpoint's oldest queued events at once; removes them from the outbox. */
  deliverBatch(input: DeliverBatchInput): Promise<DeliverBatchOutput> {
    // Shutting down: send nothing new. The events stay queued and the next start delivers them.
    if (this.closing) return Promise.reject(new ShuttingDownError('shutting down'));
    return this.track(this.runBatch(input));
  }

  private async runBatch({ webhookId, max }: DeliverBatchInput): Promise<DeliverBatchOutput> {
    const hook = await this.c.webhooks.findOne({ _id: webhookId });
    if (!hook) {
      await this.drop(webhookId, 'endpoint_removed');
      return { outcomes: [], more: false, gone: true, at: this.now() };
    }
    const items = await this.c.outbox.find({ webhook_id: webhookId }, { sort: { created_at: 1 }, limit: max });
    if (items.length === 0) return { outcomes: [], more: false, gone: false, at: this.now() };
    const results = await Promise.all(items.map((item) => this.http.post(hook.url, hook.secret, item.event, item.body)));
    // Issued in one turn: the embedded store commits the log and the outbox removal together.
    await Promise.all([this.record(webhookId, items, results), this.c.outbox.deleteMany({ _id: { $in: items.map((i) => i._id) } })]);
    for (const r of results) this.metrics.deliveries.inc({ outcome: r.ok ? 'ok' : 'failed' });
    return { outcomes: results.map((r) => r.ok), more: items.length === max, gone: false, at: this.now() };
  }

  /** Drops what a disabled endpoint still has queued (a disabled endpoint receives nothing). */
  discardQueue({ webhookId }: { webhookId: number }): Promise<number> {
    return this.drop(webhookId, 'endpoint_disabled');
  }

  private async drop(webhookId: number, reason: 'endpoint_disabled' | 'endpoint_removed'): Promise<number> {
    let dropped = 0;
    for (;;) {
      const items = await this.c.outbox.find({ webhook_id: webhookId }, { limit: 500, projection: { body: 0 } });
      if (items.length === 0) return dropped;
      if (reason === 'endpoint_disabled') await this.logDropped(webhookId, items, reason);
      await this.c.outbox.deleteMany({ _id: { $in: items.map((i) => i._id) } });
      this.metrics.dropped.inc({ reason }, items.length);
      dropped += items.length;
    }
  }

  /** Writes the attempts to the delivery log and trims it to the last `deliveryLogSize`. */
  async record(webhookId: number, items: Pick<OutboxDoc, 'event_id' | 'event'>[], results: DeliveryOutcome[]): Promise<void> {
    const at = this.now();
    const docs: DeliveryDoc[] = items.map((item, i) => ({
      _id: deliveryId(webhookId, at),
      webhook_id: webhookId,
      event_id: item.event_id,
      event: item.event,
      ts: new Date(at),
      ok: results[i]!.ok,
      status_code: results[i]!.status_code,
      error: results[i]!.error,
      latency_ms: results[i]!.latency_ms,
    }));
    await Promise.all([this.c.deliveries.insertMany(docs), this.trim(webhookId)]);
  }

  async logDropped(webhookId: number, items: Pick<OutboxDoc, 'event_id' | 'event'>[], reason: string): Promise<void> {
    await this.record(
      webhookId,
      items,
      items.map(() => ({ ok: false, status_code: null, error: `dropped_${reason}`, latency_ms: 0 })),
    );
  }

  private async trim(webhookId: number): Promise<void> {
    const old = await this.c.deliveries.find(
      { webhook_id: webhookId },
      { sort: { _id: -1 }, skip: this.options.deliveryLogSize, limit: 1000, projection: { _id: 1 } },
    );
    if (old.length > 0) await this.c.deliveries.deleteMany({ _id: { $in: old.map((d) => d._id) } });
  }

  /** Told by the machine, once per automatic disabling. */
  disabled(webhookId: number): void {
    this.metrics.disabled.inc();
    this.log.warn({ webhook_id: webhookId }, 'webhook disabled after 10 consecutive failed deliveries');
  }

  /** Stops starting batches and waits (bounded by the delivery deadline) for those in flight. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.allSettled([...this.inflight]);
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    const forget = () => this.inflight.delete(p);
    p.then(forget, forget);
    return p;
  }
}
