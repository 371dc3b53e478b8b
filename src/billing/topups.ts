// Top-ups: manual payments an administrator confirms, and subscription credits. Each is a document
// written first as `pending`, then credited to the wallet (once per top-up id: the wallet remembers
// its last credits), then marked `credited`; the one write that marks it emits the topup event. A
// repeated `reference` hits the unique index and answers with the original (finishing it if a crash
// left it pending); a sweep finishes pending top-ups left by a crash. A credit that would take the
// wallet past its limit (money.ts WALLET_LIMIT_UC) is refused with 409 wallet_limit_exceeded and the
// top-up is not kept.
import { randomBytes } from 'node:crypto';
import { ApiError } from '../errors.ts';
import type { Clock } from '../shared/common.ts';
import type { EventSink } from '../shared/events.ts';
import { isDuplicateKeyError, type Collection, type Filter, type Store } from '../store/port.ts';
import { floorCents, MICROCENTS_PER_CENT, ownerField, walletIdOf, walletTotalUc, type OwnerType } from './money.ts';
import type { Wallets } from './wallets.ts';
import { pageOf, type Page, type PageQuery } from '../shared/pages.ts';

export interface TopupDoc {
  _id: string;
  owner_type: OwnerType;
  owner_id: number;
  wallet_id: string;
  amount_cents: number;
  /** Absent when none was given (the unique index is sparse). */
  reference?: string;
  kind: 'manual' | 'subscription';
  state: 'pending' | 'credited';
  created_at: Date;
  credited_at?: Date;
  new_balance_cents?: number;
  [k: string]: unknown;
}

export interface TopupView {
  id: string;
  owner_type: OwnerType;
  owner_id: number;
  user_id?: number;
  org_id?: number;
  amount_cents: number;
  reference: string | null;
  kind: 'manual' | 'subscription';
  status: 'pending' | 'credited';
  new_balance_cents: number | null;
  created_at: string;
  credited_at: string | null;
}

/** Pending top-ups older than this are finished by the sweep (younger ones may still be in progress). */
const RECOVER_AFTER_MS = 30_000;

export function topupView(t: TopupDoc): TopupView {
  return {
    id: t._id,
    owner_type: t.owner_type,
    owner_id: t.owner_id,
    ...(t.owner_type === 'user' ? { user_id: t.owner_id } : { org_id: t.owner_id }),
    amount_cents: t.amount_cents,
    reference: t.reference ?? null,
    kind: t.kind,
    status: t.state,
    new_balance_cents: t.new_balance_cents ?? null,
    created_at: t.created_at.toISOString(),
    credited_at: t.credited_at?.toISOString() ?? null,
  };
}

export class Topups {
  readonly docs: Collection<TopupDoc>;

  constructor(
    store: Store,
    private readonly wallets: Wallets,
    private readonly events: EventSink,
    private readonly now: Clock,
    private readonly onError: (err: unknown, what: string) => void,
  ) {
    this.docs = store.collection<TopupDoc>('topups');
  }

  async init(): Promise<void> {
    await this.docs.createIndex({ keys: { reference: 1 }, unique: true, sparse: true });
    await this.docs.createIndex({ keys: { state: 1, created_at: 1 } });
    // The pages of an account's top-ups, and of everyone's (operators), newest first.
    await this.docs.createIndex({ keys: { wallet_id: 1, created_at: 1 } });
    await this.docs.createIndex({ keys: { created_at: 1 } });
  }

  /**
   * Credits `amountCents` to the owner's wallet once per reference. Resolves to the top-up and
   * whether this call created it (false: the reference was used before, by an identical top-up).
   */
  async credit(input: {
    ownerType: OwnerType;
    ownerId: number;
    amountCents: number;
    reference?: string;
    kind: TopupDoc['kind'];
  }): Promise<{ topup: TopupDoc; created: boolean }> {
    const doc: TopupDoc = {
      _id: `tu_${randomBytes(12).toString('base64url')}`,
      owner_type: input.ownerType,
      owner_id: input.ownerId,
      wallet_id: walletIdOf(input.ownerType, input.ownerId),
      amount_cents: input.amountCents,
      ...(input.reference !== undefined ? { reference: input.reference } : {}),
      kind: input.kind,
      state: 'pending',
      created_at: new Date(this.now()),
    };
    try {
      await this.docs.insertOne(doc);
    } catch (err) {
      if (!isDuplicateKeyError(err) || input.reference === undefined) throw err;
      const original = await this.docs.findOne({ reference: input.reference });
      if (!original) throw err;
      if (original.wallet_id !== doc.wallet_id || original.amount_cents !== doc.amount_cents) {
        throw new ApiError(
          'conflict',
          `Reference '${input.reference}' was already used by top-up ${original._id} (${original.amount_cents} cents to ${original.owner_type} ${original.owner_id}); use a new reference for a different top-up.`,
          { param: 'reference' },
        );
      }
      return { topup: original.state === 'pending' ? await this.apply(original) : original, created: false };
    }
    return { topup: await this.apply(doc), created: true };
  }

  /** Credits the wallet (idempotent per top-up), then marks the top-up; the marking write emits the event. */
  private async apply(t: TopupDoc): Promise<TopupDoc> {
    const wallet = await this.wallets.credit(t.wallet_id, t._id, t.amount_cents * MICROCENTS_PER_CENT).catch(async (err: unknown) => {
      // Past the wallet's limit: refused, so not kept (its reference may be used again once there is room).
      if (err instanceof ApiError && err.code === 'wallet_limit_exceeded') await this.docs.deleteOne({ _id: t._id, state: 'pending' });
      throw err;
    });
    if (!wallet) throw new Error(`wallet ${t.wallet_id} is missing`);
    const newBalance = floorCents(walletTotalUc(wallet));
    const marked = await this.docs.findOneAndUpdate(
      { _id: t._id, state: 'pending' },
      { $set: { state: 'credited', credited_at: new Date(this.now()), new_balance_cents: newBalance } },
      { returnDocument: 'after' },
    );
    if (!marked) return (await this.docs.findOne({ _id: t._id })) ?? t;
    if (marked.kind === 'manual') {
      await this.events
        .emit({
          event: 'topup',
          owner: { type: marked.owner_type, id: marked.owner_id },
          fields: { ...ownerField(marked.owner_type, marked.owner_id), amount_cents: marked.amount_cents, new_balance_cents: newBalance },
        })
        .catch((err: unknown) => this.onError(err, 'topup event failed'));
    }
    return marked;
  }

  /**
   * Top-ups newest first (by time, then id: their ids are random), of one wallet or of all; `after`
   * is the previous page's next_after, a top-up of the same listing (400 otherwise).
   */
  async page(walletId: string | undefined, q: PageQuery<string>): Promise<Page<TopupView>> {
    const filter: Filter = walletId === undefined ? {} : { wallet_id: walletId };
    if (q.after !== undefined) {
      const last = await this.docs.findOne({ ...filter, _id: q.after });
      if (!last) throw new ApiError('invalid_request', `Unknown top-up '${q.after}' in 'after'.`, { param: 'after' });
      filter.created_at = { $lte: last.created_at };
      filter.$or = [{ created_at: { $lt: last.created_at } }, { _id: { $lt: last._id } }];
    }
    const rows = await this.docs.find(filter, { sort: { created_at: -1, _id: -1 }, limit: q.limit + 1 });
    return pageOf(rows, q.limit, topupView);
  }

  /** Throws 409 wallet_limit_exceeded when crediting `amountCents` now would take the wallet past its limit. */
  assertRoom(ownerType: OwnerType, ownerId: number, amountCents: number): Promise<void> {
    return this.wallets.assertRoom(walletIdOf(ownerType, ownerId), amountCents * MICROCENTS_PER_CENT);
  }

  /** Finishes top-ups a crash left pending; resolves to how many. */
  async recover(limit = 100): Promise<number> {
    const stale = await this.docs.find({ state: 'pending', created_at: { $lte: new Date(this.now() - RECOVER_AFTER_MS) } }, { limit });
    for (const t of stale) await this.apply(t);
    return stale.length;
  }
}
