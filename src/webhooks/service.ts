// The portal's webhook operations. A webhook belongs to the caller's account: their organization's
// while they belong to one (owners and admins manage it; members do not), else their own. Another
// account's webhook is not found. State changes go through the endpoint actor.
import type { DeliveryView, TestOutcome, WebhookView } from './views.ts';
import { randomBytes } from 'node:crypto';
import type { EndpointRef } from './kind.ts';
import type { ActorView } from '../actors/record.ts';
import { ApiError } from '../errors.ts';
import type { OrgRole } from '../identity/orgs.ts';
import { nextId, type Clock } from '../shared/common.ts';
import type { Store } from '../store/port.ts';
import type { WebhookEndpointContext } from '../../machines/webhook-endpoint.machine.ts';
import { checkWebhookUrl, WebhookUrlError, type AddressPolicy } from './address.ts';
import type { WebhookDeliverer } from './deliverer.ts';
import type { WebhookHttp } from './http.ts';
import { eventBody, newEventId, type WebhookCollections, type WebhookDoc } from './records.ts';
import { newestFirst, type Page, type PageQuery } from '../shared/pages.ts';

export interface WebhookAccount {
  ownerType: 'user' | 'org';
  ownerId: number;
  /** The caller's organization role, or null for a personal account. */
  role: OrgRole | null;
}

export interface WebhookServiceDeps {
  store: Store;
  collections: WebhookCollections;
  endpoint: EndpointRef;
  http: WebhookHttp;
  deliverer: WebhookDeliverer;
  policy: AddressPolicy;
  maxPerAccount: number;
  batchSize: number;
  accountOf: (userId: number) => Promise<WebhookAccount>;
  now: Clock;
}

export class WebhookService {
  private readonly c: WebhookCollections;

  constructor(private readonly deps: WebhookServiceDeps) {
    this.c = deps.collections;
  }

  async create(userId: number, input: { url: string; events: string[] }): Promise<WebhookView & { secret: string }> {
    const account = await this.manager(userId);
    const url = this.checkUrl(input.url);
    const owner = `${account.ownerType}:${account.ownerId}`;
    const existing = await this.c.webhooks.countDocuments({ owner });
    if (existing >= this.deps.maxPerAccount) {
      throw new ApiError('invalid_request', `An account may have at most ${this.deps.maxPerAccount} webhooks; delete one first.`);
    }
    const now = new Date(this.deps.now());
    const id = await nextId(this.deps.store, 'webhooks');
    const doc: WebhookDoc = {
      _id: id,
      owner,
      owner_type: account.ownerType,
      owner_id: account.ownerId,
      url,
      events: [...new Set(input.events)],
      secret: `whsec_${randomBytes(32).toString('base64url')}`,
      created_at: now,
      updated_at: now,
    };
    await this.c.webhooks.insertOne(doc);
    const view = await this.deps.endpoint(id).spawn({ webhookId: id, batchSize: this.deps.batchSize });
    return { ...this.view(doc, view), secret: doc.secret };
  }

  async list(userId: number): Promise<WebhookView[]> {
    const account = await this.manager(userId);
    const docs = await this.c.webhooks.find({ owner: `${account.ownerType}:${account.ownerId}` }, { sort: { _id: 1 }, limit: this.deps.maxPerAccount * 2 });
    return Promise.all(docs.map(async (d) => this.view(d, await this.actor(d))));
  }

  async get(userId: number, id: number): Promise<WebhookView> {
    const doc = await this.owned(userId, id);
    return this.view(doc, await this.actor(doc));
  }

  async update(userId: number, id: number, patch: { url?: string; events?: string[] }): Promise<WebhookView> {
    const doc = await this.owned(userId, id);
    const set: Partial<WebhookDoc> = { updated_at: new Date(this.deps.now()) };
    if (patch.url !== undefined) set.url = this.checkUrl(patch.url);
    if (patch.events !== undefined) set.events = [...new Set(patch.events)];
    await this.c.webhooks.updateOne({ _id: doc._id }, { $set: set });
    const next = { ...doc, ...set };
    return this.view(next, await this.actor(next));
  }

  async remove(userId: number, id: number): Promise<{ id: number; deleted: true }> {
    const doc = await this.owned(userId, id);
    await this.c.webhooks.deleteOne({ _id: doc._id });
    await this.c.outbox.deleteMany({ webhook_id: doc._id });
    await this.c.deliveries.deleteMany({ webhook_id: doc._id });
    await this.deps
      .endpoint(doc._id)
      .send({ type: 'remove' })
      .catch(() => undefined);
    return { id: doc._id, deleted: true };
  }

  /** The dashboard's re-enable: the endpoint receives events again and its failure counter restarts. */
  async enable(userId: number, id: number): Promise<WebhookView> {
    const doc = await this.owned(userId, id);
    const view = await this.deps.endpoint(doc._id).send({ type: 'enable' });
    return this.view(doc, view);
  }

  /**
   * Sends a signed `ping` now and answers with the outcome (never the receiver's body). Written to
   * the delivery log; it does not move the failure counter, so a disabled endpoint can be tested
   * before it is re-enabled.
   */
  async test(userId: number, id: number): Promise<TestOutcome> {
    const doc = await this.owned(userId, id);
    const nowMs = this.deps.now();
    const eventId = newEventId(nowMs);
    const body = eventBody(eventId, 'ping', Math.floor(nowMs / 1000), { webhook_id: doc._id });
    const outcome = await this.deps.http.post(doc.url, doc.secret, 'ping', body);
    await this.deps.deliverer.record(doc._id, [{ event_id: eventId, event: 'ping' }], [outcome]);
    return { event_id: eventId, ...outcome };
  }

  /** Delivery attempts, newest first, a page at a time (`after`: the previous page's next_after). */
  async deliveries(userId: number, id: number, q: PageQuery<string>): Promise<Page<DeliveryView>> {
    const doc = await this.owned(userId, id);
    return newestFirst(this.c.deliveries, { webhook_id: doc._id }, q, (d) => ({
      id: d._id,
      event_id: d.event_id,
      event: d.event,
      ts: d.ts.toISOString(),
      ok: d.ok,
      status_code: d.status_code,
      error: d.error,
      latency_ms: d.latency_ms,
    }));
  }

  // ---- helpers ----

  private async manager(userId: number): Promise<WebhookAccount> {
    const account = await this.deps.accountOf(userId);
    if (account.role === 'member') {
      throw new ApiError('role_forbidden', "Only the organization's owner or an admin can manage its webhooks.");
    }
    return account;
  }

  private async owned(userId: number, id: number): Promise<WebhookDoc> {
    const account = await this.manager(userId);
    const doc = await this.c.webhooks.findOne({ _id: id });
    if (!doc || doc.owner !== `${account.ownerType}:${account.ownerId}`) throw new ApiError('not_found', 'No such webhook.');
    return doc;
  }

  private checkUrl(raw: string): string {
    try {
      return checkWebhookUrl(raw, this.deps.policy).href;
    } catch (err) {
      if (err instanceof WebhookUrlError) throw new ApiError('invalid_request', `Invalid field 'url': ${err.message}.`, { param: 'url' });
      throw err;
    }
  }

  private async actor(doc: WebhookDoc): Promise<ActorView | null> {
    return this.deps
      .endpoint(doc._id)
      .get()
      .catch(() => null);
  }

  private view(doc: WebhookDoc, actor: ActorView | null): WebhookView {
    const ctx = (actor?.context ?? null) as WebhookEndpointContext | null;
    const disabled = actor !== null && typeof actor.value === 'object' && actor.value !== null && 'disabled' in actor.value;
    return {
      id: doc._id,
      url: doc.url,
      events: doc.events,
      status: disabled ? 'disabled' : 'enabled',
      consecutive_failures: ctx?.consecutiveFailures ?? 0,
      created_at: doc.created_at.toISOString(),
      last_delivery_at: ctx?.lastDeliveryAt ? new Date(ctx.lastDeliveryAt).toISOString() : null,
      disabled_at: ctx?.disabledAt ? new Date(ctx.disabledAt).toISOString() : null,
    };
  }
}
