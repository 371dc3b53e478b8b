// Webhooks of the signed-in user's account (their organization's while they belong to one: owners
// and admins manage them). Create (the secret is shown only here), list, show, change, delete,
// re-enable, send a test ping, and page through the deliveries.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireSession, sessionOf } from '../auth.ts';
import { Closed, errors, IsoDate, KeyString, NullableIso, NumericId, OneOf } from '../schemas.ts';
import { EVENT_NAMES } from '../../webhooks/records.ts';
import { PageOf } from '../pages.ts';

const EventName = OneOf(EVENT_NAMES);
const Events = Type.Array(EventName, { minItems: 1, maxItems: EVENT_NAMES.length * 2 });
const Url = KeyString(2048, { minLength: 1 });

const Webhook = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]),
  consecutive_failures: Type.Integer(),
  created_at: IsoDate,
  last_delivery_at: NullableIso,
  disabled_at: NullableIso,
});
const WebhookWithSecret = Type.Intersect([Webhook, Type.Object({ secret: Type.String({ description: 'whsec_…; shown only at creation' }) })]);

const Outcome = {
  ok: Type.Boolean(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()], {
    description: 'timeout, connection_refused, tls_error, blocked_address, dns_error, http_<status>, dropped_<reason>...',
  }),
  latency_ms: Type.Integer(),
};
const Delivery = Type.Object({ id: Type.String(), event_id: Type.String(), event: Type.String(), ts: IsoDate, ...Outcome });
const TestResult = Type.Object({ event_id: Type.String(), ...Outcome });

export function registerPortalWebhookRoutes(app: App, deps: AppDeps): void {
  const { webhooks } = deps.services;
  const base = { preHandler: requireSession(deps) };
  const tags = ['webhooks'];
  const security = [{ session: [] }];
  const params = Closed({ id: NumericId });

  app.post(
    '/portal/webhooks',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Create a webhook; the secret is returned only here',
        body: Closed({ url: Url, events: Events }),
        response: { 201: WebhookWithSecret, ...errors(400, 401, 403) },
      },
    },
    async (req, reply) => reply.code(201).send(await webhooks.create(sessionOf(req).id, req.body)),
  );

  app.get(
    '/portal/webhooks',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "Your account's webhooks (never the secret)",
        response: { 200: Type.Object({ data: Type.Array(Webhook) }), ...errors(401, 403) },
      },
    },
    async (req) => ({
      data: await webhooks.list(sessionOf(req).id),
    }),
  );

  app.get(
    '/portal/webhooks/:id',
    { ...base, schema: { tags, security, summary: 'One webhook', params, response: { 200: Webhook, ...errors(401, 403, 404) } } },
    async (req) => webhooks.get(sessionOf(req).id, Number(req.params.id)),
  );

  app.patch(
    '/portal/webhooks/:id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Change the url or the events (state and failure counter unchanged)',
        params,
        body: Closed({ url: Type.Optional(Url), events: Type.Optional(Events) }),
        response: { 200: Webhook, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => webhooks.update(sessionOf(req).id, Number(req.params.id), req.body),
  );

  app.delete(
    '/portal/webhooks/:id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Delete a webhook (queued events are dropped)',
        params,
        response: { 200: Type.Object({ id: Type.Integer(), deleted: Type.Boolean() }), ...errors(401, 403, 404) },
      },
    },
    async (req) => webhooks.remove(sessionOf(req).id, Number(req.params.id)),
  );

  app.post(
    '/portal/webhooks/:id/enable',
    {
      ...base,
      schema: { tags, security, summary: 'Re-enable a webhook; its failure counter restarts', params, response: { 200: Webhook, ...errors(401, 403, 404) } },
    },
    async (req) => webhooks.enable(sessionOf(req).id, Number(req.params.id)),
  );

  app.post(
    '/portal/webhooks/:id/test',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "Send a signed ping now; answers with the outcome (never the receiver's body)",
        params,
        response: { 200: TestResult, ...errors(401, 403, 404) },
      },
    },
    async (req) => webhooks.test(sessionOf(req).id, Number(req.params.id)),
  );

  app.get(
    '/portal/webhooks/:id/deliveries',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Delivery attempts, newest first; pass next_after as after for the next page',
        params,
        querystring: Closed({
          limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: '1 to 100 (larger is 100), default 50' })),
          after: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}:[0-9a-z]{1,40}$', description: "The previous page's next_after" })),
        }),
        response: { 200: PageOf(Delivery), ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const limit = Math.min(100, Math.max(1, Number(req.query.limit ?? 50)));
      return webhooks.deliveries(sessionOf(req).id, Number(req.params.id), { limit, ...(req.query.after !== undefined ? { after: req.query.after } : {}) });
    },
  );
}
