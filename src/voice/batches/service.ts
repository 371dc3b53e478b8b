// Voice batches (POST /v1/voice/batches and the /v1/voice/batches endpoints, their /portal twins):
// the façade the HTTP edge calls. `create` checks everything that can refuse before the batch exists
// (the call template by the call's own `check`, without the wallet: nothing is reserved for calls
// not placed; every number by the call's `destination`, an invalid one reported per row; the window
// against the numbers' legal hours; max_concurrent against the account's call limit), writes the
// rows, then spawns the batch's actor (src/voice/batches/kind.ts), which paces the calls. Reads come
// from the actor's view and the rows; controls are messages to the actor.
import { randomBytes } from 'node:crypto';
import type { ActorRuntime } from '../../actors/runtime.ts';
import type { Payer } from '../../billing/types.ts';
import { ApiError, echo } from '../../errors.ts';
import type { ApiKeyPrincipal } from '../../identity/keys.ts';
import { voiceFeatures } from '../../models/catalog.ts';
import type { ModelDoc } from '../../models/types.ts';
import { phoneNumbers } from '../../shared/phones.ts';
import type { BatchTiming, ControlReply } from '../../../machines/voice-batch.machine.ts';
import { check, destination, type CheckDeps, type VoiceCallBody } from '../checks.ts';
import type { IdempotencyKeys } from '../idempotency.ts';
import { callPrice, centsOf, orderKey } from '../kind.ts';
import { BATCH_KIND, type BatchContext, type BatchKind } from './kind.ts';
import type { BatchSpecFields, Retryable } from './pacing.ts';
import { rowId, type BatchRows, type RowDoc, type RowStatus } from './rows.ts';
import { resultsCsv } from './results.ts';
import { batchObject, rowObject, type BatchObject, type CallRead } from './views.ts';
import { settleWindow, type BatchWindow } from './window.ts';

/** The body of POST /v1/voice/batches, as its schema validated it. */
export interface BatchBody extends Omit<VoiceCallBody, 'to' | 'variables' | 'metadata'> {
  name?: string;
  calls: { to: string; variables?: Record<string, string>; metadata?: Record<string, string> }[];
  window?: BatchWindow;
  max_concurrent?: number;
  retry?: { on?: Retryable[]; max_attempts?: number; min_gap_seconds?: number };
  start_at?: number;
  metadata?: Record<string, string>;
}

export interface VoiceBatchesDeps {
  runtime: Pick<ActorRuntime, 'ref' | 'list' | 'spawn' | 'get'>;
  kind: BatchKind;
  rows: BatchRows;
  keys: Pick<IdempotencyKeys, 'claim'>;
  check: CheckDeps;
  models: { resolve(id: string, type: 'voice', account: string): Promise<ModelDoc> };
  payerFor(principal: ApiKeyPrincipal): Promise<Payer>;
  /** The account's own limit on calls at once (null: the gateway's). */
  maxConcurrentCalls(account: string): Promise<number | null>;
  defaultMaxConcurrent: number;
  timing: BatchTiming;
  /** A call's view (the CSV's and the rows' analysis): the call API's. */
  call: CallRead;
  now(): number;
}

const BATCH_ID = /^batch_[0-9a-f]{24}$/;
const MAX_START_AHEAD_MS = 90 * 86_400_000;
const DEFAULT_RETRY = { on: [] as Retryable[], max_attempts: 1, min_gap_seconds: 600 };

export class VoiceBatches {
  constructor(private readonly deps: VoiceBatchesDeps) {}

  async create(principal: ApiKeyPrincipal, body: BatchBody, idempotencyKey: string | undefined): Promise<{ created: boolean; batch: BatchObject }> {
    const payer = await this.deps.payerFor(principal);
    const settled = await this.settle(payer, body);
    const batchId = `batch_${randomBytes(12).toString('hex')}`;
    if (idempotencyKey !== undefined) {
      const claim = await this.deps.keys.claim(payer.walletId, `batch:${idempotencyKey}`, body, batchId);
      if (!claim.fresh) return { created: false, batch: await this.waitFor(payer.walletId, claim.callId) };
      try {
        return { created: true, batch: await this.start(principal, payer, body, settled, batchId) };
      } catch (err) {
        await claim.release().catch(() => undefined);
        throw err;
      }
    }
    return { created: true, batch: await this.start(principal, payer, body, settled, batchId) };
  }

  /** What a batch would be, nothing stored (the dashboard's estimate): its numbers and the range of its cost. */
  async estimate(principal: ApiKeyPrincipal, body: BatchBody) {
    const payer = await this.deps.payerFor(principal);
    const s = await this.settle(payer, body);
    const valid = s.rows.filter((r) => r.error === null).length;
    const perSecond = callPrice(voiceFeatures(s.model).price_per_minute_cents, 1);
    const maxSeconds = Math.min(body.max_duration_seconds ?? 600, voiceFeatures(s.model).max_duration_seconds);
    const attempts = s.retry.max_attempts;
    return {
      numbers: body.calls.length,
      valid,
      invalid: body.calls.length - valid,
      attempts_max: valid * attempts,
      // min: nobody answers (unanswered calls cost nothing); typical: each number answered once for a minute (or its maximum); max: every attempt to its maximum.
      cost_cents: { min: 0, typical: centsOf(valid * Math.min(60, maxSeconds) * perSecond), max: centsOf(valid * attempts * maxSeconds * perSecond) },
    };
  }

  /** The checks of a creation (or an estimate): the model, the template, every number, the window, the pacing. */
  private async settle(payer: Payer, body: BatchBody) {
    const model = await this.deps.models.resolve(body.model, 'voice', payer.walletId);
    const now = this.deps.now();
    const { calls, name: _n, window, max_concurrent, retry, start_at, metadata: _m, ...template } = body;
    const countries = new Set<string>();
    const rows = calls.map((c, index) => {
      try {
        const to = destination(model, c.to, `calls[${index}].to`);
        const country = phoneNumbers().parsePhoneNumberFromString(to)?.country;
        if (country) countries.add(country);
        return { index, to, variables: c.variables ?? {}, metadata: c.metadata ?? {}, error: null };
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        return { index, to: c.to, variables: c.variables ?? {}, metadata: c.metadata ?? {}, error: { code: err.code, message: err.message } };
      }
    });
    const first = rows.find((r) => r.error === null);
    if (!first) {
      const e = rows[0]!.error!;
      throw new ApiError('invalid_request', `Every number of 'calls' is invalid; the first: ${e.message}`, { param: 'calls[0].to' });
    }
    // The template is checked as a call's is, with the first valid number and without the wallet (nothing is held now).
    const unlimited: CheckDeps = { ...this.deps.check, available: async () => Number.MAX_SAFE_INTEGER };
    await check(unlimited, model, payer, { ...template, to: first.to, ...(first.variables ? { variables: first.variables } : {}) });
    const limit = (await this.deps.maxConcurrentCalls(payer.walletId)) ?? this.deps.defaultMaxConcurrent;
    if (max_concurrent !== undefined && max_concurrent > limit) {
      throw new ApiError('invalid_request', `'max_concurrent' must be at most your account's call limit, ${limit}, not ${max_concurrent}.`, {
        param: 'max_concurrent',
      });
    }
    const startAt = start_at === undefined ? now : Math.max(now, start_at * 1000);
    if (startAt > now + MAX_START_AHEAD_MS) throw new ApiError('invalid_request', "'start_at' must be within 90 days.", { param: 'start_at' });
    return {
      model,
      template,
      rows,
      startAt,
      window: settleWindow(window, [...countries].sort(), now),
      maxConcurrent: max_concurrent ?? limit,
      retry: { ...DEFAULT_RETRY, ...retry, on: [...new Set(retry?.on ?? [])] },
    };
  }

  private async start(principal: ApiKeyPrincipal, payer: Payer, body: BatchBody, s: Awaited<ReturnType<VoiceBatches['settle']>>, batchId: string) {
    const now = this.deps.now();
    const docs: RowDoc[] = s.rows.map((r) => ({
      _id: rowId(batchId, r.index),
      batch_id: batchId,
      account: payer.walletId,
      index: r.index,
      to: r.to,
      variables: r.variables,
      metadata: r.metadata,
      status: r.error ? 'invalid' : 'queued',
      attempts: [],
      current: null,
      next_attempt_at: 0,
      final_call_id: null,
      cost_microcents: 0,
      error: r.error,
    }));
    await this.deps.rows.insert(docs);
    const spec: BatchSpecFields = {
      principal,
      owner: { type: payer.ownerType, id: payer.ownerId },
      name: body.name ?? null,
      model: s.model._id,
      template: s.template,
      window: s.window,
      maxConcurrent: s.maxConcurrent,
      retry: s.retry,
      metadata: body.metadata ?? {},
    };
    const counts = await this.deps.rows.counts(batchId);
    await this.deps.runtime.spawn(BATCH_KIND, batchId, {
      batchId,
      account: payer.walletId,
      createdAt: now,
      startAt: s.startAt,
      counts,
      timing: this.deps.timing,
      spec,
    });
    return this.batch(payer.walletId, batchId);
  }

  /** The batch an earlier request with the same key created (it may still be writing its rows: waited for a few seconds). */
  private async waitFor(account: string, batchId: string) {
    const deadline = this.deps.now() + 5000;
    for (;;) {
      try {
        return await this.batch(account, batchId);
      } catch (err) {
        if (!(err instanceof ApiError) || err.code !== 'not_found') throw err;
        if (this.deps.now() >= deadline)
          throw new ApiError('conflict', 'A request with this Idempotency-Key is still creating its batch; retry.', { headers: { 'retry-after': '1' } });
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  private async context(account: string, id: string): Promise<BatchContext> {
    const notFound = () => new ApiError('not_found', `No batch '${echo(id)}'.`, { param: 'id' });
    if (!BATCH_ID.test(id)) throw notFound();
    const view = await this.deps.runtime.get(BATCH_KIND, id).catch(() => null);
    const c = (view?.context ?? view?.input ?? null) as BatchContext | null;
    if (!c || c.account !== account) throw notFound();
    return c.status
      ? c
      : ({ ...c, status: 'scheduled', pausedReason: null, startedAt: null, endedAt: null, nextWindowAt: null, costMicrocents: 0 } as BatchContext);
  }

  /** The batch as the API answers it (its `rejected`: the first 1000 invalid numbers). */
  async batch(account: string, id: string): Promise<BatchObject> {
    const c = await this.context(account, id);
    return batchObject(c, await this.deps.rows.page(id, { status: 'invalid', limit: 1000 }));
  }

  /** The batch with its rows paged by index, optionally of one status. */
  async get(account: string, id: string, page: { limit: number; after?: number; status?: RowStatus }) {
    const batch = await this.batch(account, id);
    const data = await this.deps.rows.page(id, {
      limit: page.limit + 1,
      ...(page.after !== undefined ? { afterIndex: page.after } : {}),
      ...(page.status ? { status: page.status } : {}),
    });
    const rows = await Promise.all(
      data.slice(0, page.limit).map(async (r) => rowObject(r, r.final_call_id ? await this.deps.call(account, r.final_call_id).catch(() => null) : null)),
    );
    return {
      ...batch,
      calls: { object: 'list' as const, data: rows, has_more: data.length > page.limit, first_id: rows[0]?.index ?? null, last_id: rows.at(-1)?.index ?? null },
    };
  }

  /** The account's batches, newest first; `after` a batch id from the previous page. */
  async list(account: string, opts: { limit: number; after?: string }) {
    const where: Record<string, unknown> = { account };
    if (opts.after) {
      const c = await this.context(account, opts.after);
      where.order = { $lt: orderKey(c.createdAt, c.batchId) };
    }
    const found = await this.deps.runtime.list(BATCH_KIND, where, { sort: { order: -1 }, limit: opts.limit + 1 });
    const data = await Promise.all(found.slice(0, opts.limit).map((b) => this.batch(account, b.id)));
    return { object: 'list' as const, data, has_more: found.length > opts.limit, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  }

  /** Pause, resume or cancel: 409 batch_not_active when the batch's status does not allow it. */
  async control(account: string, id: string, what: 'pause' | 'resume' | 'cancel') {
    const c = await this.context(account, id);
    // An ended batch's actor is final: it takes no more events.
    const { reply } =
      c.status === 'completed' || c.status === 'canceled'
        ? { reply: { type: 'control', ok: false, status: c.status } satisfies ControlReply }
        : await this.deps.runtime.ref(this.deps.kind, id).ask<ControlReply>({ type: `api.${what}`, now: this.deps.now() }, { wait: 'durable' });
    if (!reply.ok) {
      const hint =
        what === 'resume'
          ? 'only a paused batch resumes'
          : `only a batch not ended${what === 'pause' ? ' nor paused already' : ''} can be ${what === 'pause' ? 'paused' : 'cancelled'}`;
      throw new ApiError('batch_not_active', `The batch is ${reply.status}: ${hint}.`, { param: 'id' });
    }
    return this.batch(account, id);
  }

  /** GET …/results: the batch's rows as CSV (src/voice/batches/results.ts). */
  async results(account: string, id: string): Promise<string> {
    await this.context(account, id);
    const rows: RowDoc[] = [];
    for (let after: number | undefined; ; ) {
      const page = await this.deps.rows.page(id, { limit: 1000, ...(after !== undefined ? { afterIndex: after } : {}) });
      rows.push(...page);
      if (page.length < 1000) break;
      after = page.at(-1)!.index;
    }
    const calls = new Map<string, Awaited<ReturnType<CallRead>>>();
    for (let i = 0; i < rows.length; i += 16) {
      await Promise.all(
        rows.slice(i, i + 16).map(async (r) => {
          if (r.final_call_id) calls.set(r.final_call_id, await this.deps.call(account, r.final_call_id).catch(() => null));
        }),
      );
    }
    return resultsCsv(rows, calls);
  }
}
