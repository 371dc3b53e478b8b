// Subscriptions: a plan from the configuration attached to a user or an organization, crediting its
// monthly credits to that wallet once per cycle. Cycle k starts k calendar months after the anchor
// (UTC; a 31st falls back to the month's last day). `credited_cycle` is the last cycle credited;
// the credit of cycle k is a top-up with the reference `sub:<owner>:g<generation>:c<k>`, so the
// unique index makes it happen once however many instances sweep, retry or crash mid-way.
// Starting a subscription (or changing its plan) begins a new generation and credits its cycle 0;
// it is refused (409 wallet_limit_exceeded) when that credit would pass the wallet's limit. A
// renewal the limit refuses stays due, reported at each sweep, and is credited once there is room.
import { ApiError } from '../errors.ts';
import type { Clock } from '../shared/common.ts';
import { isDuplicateKeyError, type Collection, type Store } from '../store/port.ts';
import { addMonths, walletIdOf, type OwnerType } from './money.ts';
import type { Topups } from './topups.ts';

export interface Plan {
  id: string;
  name?: string;
  monthly_credit_cents: number;
}

export interface SubscriptionDoc {
  _id: string; // the wallet id: 'user:<id>' | 'org:<id>'
  owner_type: OwnerType;
  owner_id: number;
  plan: string;
  status: 'active' | 'canceled';
  generation: number;
  anchor: Date;
  credited_cycle: number;
  /** Start of the next cycle to credit; null once canceled. */
  next_due_at: Date | null;
  created_at: Date;
  updated_at: Date;
  [k: string]: unknown;
}

export interface SubscriptionView {
  owner_type: OwnerType;
  owner_id: number;
  status: 'none' | 'active' | 'canceled';
  plan: string | null;
  monthly_credit_cents: number | null;
  current_period_start: string | null;
  next_renewal_at: string | null;
  cycles_credited: number;
}

export class Subscriptions {
  readonly docs: Collection<SubscriptionDoc>;
  private readonly plans: Map<string, Plan>;

  constructor(
    store: Store,
    private readonly topups: Topups,
    plans: readonly Plan[],
    private readonly now: Clock,
    private readonly onError: (err: unknown, what: string) => void,
  ) {
    this.docs = store.collection<SubscriptionDoc>('subscriptions');
    this.plans = new Map(plans.map((p) => [p.id, p]));
  }

  async init(): Promise<void> {
    await this.docs.createIndex({ keys: { next_due_at: 1 } });
  }

  view(ownerType: OwnerType, ownerId: number, s: SubscriptionDoc | null): SubscriptionView {
    if (!s) {
      return {
        owner_type: ownerType,
        owner_id: ownerId,
        status: 'none',
        plan: null,
        monthly_credit_cents: null,
        current_period_start: null,
        next_renewal_at: null,
        cycles_credited: 0,
      };
    }
    const active = s.status === 'active';
    return {
      owner_type: s.owner_type,
      owner_id: s.owner_id,
      status: s.status,
      plan: s.plan,
      monthly_credit_cents: this.plans.get(s.plan)?.monthly_credit_cents ?? null,
      current_period_start: active && s.credited_cycle >= 0 ? addMonths(s.anchor, s.credited_cycle).toISOString() : null,
      next_renewal_at: active ? (s.next_due_at?.toISOString() ?? null) : null,
      cycles_credited: s.credited_cycle + 1,
    };
  }

  get(ownerType: OwnerType, ownerId: number): Promise<SubscriptionDoc | null> {
    return this.docs.findOne({ _id: walletIdOf(ownerType, ownerId) });
  }

  /**
   * Starts `plan` (a new generation, cycle 0 credited now), keeps an active subscription to the same
   * plan as it is, or cancels with `plan` null. Resolves to the subscription and whether it started.
   */
  async set(ownerType: OwnerType, ownerId: number, plan: string | null): Promise<{ sub: SubscriptionDoc | null; started: boolean }> {
    if (plan !== null && !this.plans.has(plan)) {
      throw new ApiError('invalid_request', `Unknown plan '${plan}'; plans: ${[...this.plans.keys()].join(', ') || '(none configured)'}.`, { param: 'plan' });
    }
    const id = walletIdOf(ownerType, ownerId);
    const current = await this.docs.findOne({ _id: id });
    const at = new Date(this.now());
    if (plan === null) {
      if (!current || current.status === 'canceled') return { sub: current, started: false };
      const canceled = await this.docs.findOneAndUpdate(
        { _id: id, generation: current.generation },
        { $set: { status: 'canceled', next_due_at: null, updated_at: at } },
        { returnDocument: 'after' },
      );
      if (!canceled) throw concurrentChange();
      return { sub: canceled, started: false };
    }
    if (current?.status === 'active' && current.plan === plan) return { sub: current, started: false };
    await this.topups.assertRoom(ownerType, ownerId, this.plans.get(plan)!.monthly_credit_cents);
    const next: SubscriptionDoc = {
      _id: id,
      owner_type: ownerType,
      owner_id: ownerId,
      plan,
      status: 'active',
      generation: (current?.generation ?? 0) + 1,
      anchor: at,
      credited_cycle: -1,
      next_due_at: at,
      created_at: current?.created_at ?? at,
      updated_at: at,
    };
    const res = current
      ? await this.docs.replaceOne({ _id: id, generation: current.generation }, next)
      : await this.docs.insertOne(next).then(
          () => ({ matchedCount: 1 }),
          (err: unknown) => {
            if (isDuplicateKeyError(err)) return { matchedCount: 0 };
            throw err;
          },
        );
    if (res.matchedCount !== 1) throw concurrentChange();
    return { sub: await this.renew(next), started: true };
  }

  /** Credits every cycle of `s` that has started and is not credited yet; resolves to the latest state. */
  async renew(s: SubscriptionDoc): Promise<SubscriptionDoc | null> {
    let sub: SubscriptionDoc | null = s;
    while (sub && sub.status === 'active' && sub.next_due_at && sub.next_due_at.getTime() <= this.now()) {
      const cycle: number = sub.credited_cycle + 1;
      const plan = this.plans.get(sub.plan);
      if (!plan) {
        this.onError(new Error(`subscription ${sub._id}: plan '${sub.plan}' is no longer configured`), 'renewal skipped');
        return sub;
      }
      await this.topups.credit({
        ownerType: sub.owner_type,
        ownerId: sub.owner_id,
        amountCents: plan.monthly_credit_cents,
        reference: `sub:${sub._id}:g${sub.generation}:c${cycle}`,
        kind: 'subscription',
      });
      const advanced: SubscriptionDoc | null = await this.docs.findOneAndUpdate(
        { _id: sub._id, generation: sub.generation, credited_cycle: cycle - 1 },
        { $set: { credited_cycle: cycle, next_due_at: addMonths(sub.anchor, cycle + 1), updated_at: new Date(this.now()) } },
        { returnDocument: 'after' },
      );
      // Lost the race (another instance advanced it, or the plan changed): continue from what is stored.
      sub = advanced ?? (await this.docs.findOne({ _id: sub._id }));
    }
    return sub;
  }

  /** Renews due subscriptions (a periodic sweep); resolves to how many were looked at. */
  async sweep(limit = 100): Promise<number> {
    const due = await this.docs.find({ next_due_at: { $lte: new Date(this.now()) } }, { limit, sort: { next_due_at: 1 } });
    for (const s of due) {
      try {
        await this.renew(s);
      } catch (err) {
        this.onError(err, `renewal of ${s._id} failed`);
      }
    }
    return due.length;
  }
}

function concurrentChange(): ApiError {
  return new ApiError('conflict', 'The subscription was changed concurrently; read it and retry.');
}
