// Limits an operator sets on one account (a user's or an organization's, `user:<id>` | `org:<id>`),
// over the gateway's defaults: PATCH /admin/limits/{user|org}/{id}. The services that enforce a
// limit read it here. One so far: `voice_max_concurrent_calls` (src/voice/service.ts; default
// `voice.maxConcurrentCalls`).
import { ApiError } from '../errors.ts';
import type { Clock } from '../shared/common.ts';
import type { Store } from '../store/port.ts';

export interface AccountLimitValues {
  /** Calls not yet ended at once; null: the gateway's default. */
  voice_max_concurrent_calls: number | null;
  /** Days a call's recording is kept (src/voice/recordings.ts); null: the model's, else the calls' retention. */
  recording_retention_days: number | null;
}

interface AccountLimitsDoc {
  _id: string;
  voice_max_concurrent_calls?: number;
  recording_retention_days?: number;
  updated_at: Date;
  [k: string]: unknown;
}

export class AccountLimits {
  private readonly limits;

  /** `exists`: whether the user or organization is there (the identity directory's). */
  constructor(
    store: Store,
    private readonly now: Clock,
    private readonly exists: (owner: { type: 'user' | 'org'; id: number }) => Promise<boolean>,
  ) {
    this.limits = store.collection<AccountLimitsDoc>('account_limits');
  }

  /**
   * For the operator's routes: throws not_found (404) unless the user or organization exists, so
   * that a mistyped id is told, not given limits that no account will ever read.
   */
  async requireAccount(type: 'user' | 'org', id: number): Promise<string> {
    if (!(await this.exists({ type, id }))) throw new ApiError('not_found', `No ${type === 'user' ? 'user' : 'organization'} ${id}.`);
    return `${type}:${id}`;
  }

  async get(account: string): Promise<AccountLimitValues> {
    const doc = await this.limits.findOne({ _id: account });
    return { voice_max_concurrent_calls: doc?.voice_max_concurrent_calls ?? null, recording_retention_days: doc?.recording_retention_days ?? null };
  }

  /** Sets the limits given (null: back to the default); the others stay as they are. */
  async set(account: string, patch: Partial<AccountLimitValues>): Promise<AccountLimitValues> {
    const set: Record<string, unknown> = { updated_at: new Date(this.now()) };
    const unset: Record<string, ''> = {};
    for (const [name, value] of Object.entries(patch)) {
      if (value === null) unset[name] = '';
      else if (value !== undefined) set[name] = value;
    }
    await this.limits.updateOne({ _id: account }, { $set: set, ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}) }, { upsert: true });
    return this.get(account);
  }
}
