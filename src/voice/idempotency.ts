// Idempotent call creation (`Idempotency-Key` on POST /v1/voice/call): one record per account and
// key for 24 hours, holding a hash of the request body and the call it created. The same key with
// the same body returns that call; with another body, 409 idempotency_key_reused. The record is
// written before the call is placed (a unique _id), so two requests racing with one key place one
// call: the loser reads the winner's record. A creation that failed deletes its record.
import { createHash } from 'node:crypto';
import type { Store } from '../store/port.ts';
import { isDuplicateKeyError } from '../store/port.ts';
import { ApiError } from '../errors.ts';

const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

interface IdempotencyDoc {
  _id: string;
  body_sha256: string;
  call_id: string;
  expires_at: Date;
  [k: string]: unknown;
}

/** The outcome of claiming a key: a fresh claim for `callId`, or the call an earlier request made. */
type Claim = { fresh: true; release(): Promise<void> } | { fresh: false; callId: string };

export class IdempotencyKeys {
  private readonly records;

  constructor(
    store: Store,
    private readonly now: () => number,
  ) {
    this.records = store.collection<IdempotencyDoc>('voice_idempotency');
  }

  /** Expired records are swept by the store's TTL (cleanup only: `claim` compares times itself). */
  async init(): Promise<void> {
    await this.records.createIndex({ keys: { expires_at: 1 }, expireAfterSeconds: 0 });
  }

  /** Claims `key` for `callId`, or answers the call it already names; 409 when the body differs. */
  async claim(account: string, key: string, body: unknown, callId: string): Promise<Claim> {
    const id = `${account}:${key}`;
    const hash = createHash('sha256').update(canonicalJson(body)).digest('hex');
    const now = this.now();
    for (let attempt = 0; attempt < 3; attempt++) {
      const found = await this.records.findOne({ _id: id });
      if (found && found.expires_at.getTime() > now) {
        if (found.body_sha256 !== hash) {
          throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body in the last 24 hours; use a new key.', {
            param: 'Idempotency-Key',
          });
        }
        return { fresh: false, callId: found.call_id };
      }
      if (found) await this.records.deleteOne({ _id: id, expires_at: found.expires_at });
      try {
        await this.records.insertOne({ _id: id, body_sha256: hash, call_id: callId, expires_at: new Date(now + IDEMPOTENCY_TTL_MS) });
        return { fresh: true, release: async () => void (await this.records.deleteOne({ _id: id, call_id: callId })) };
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err; // another request took it meanwhile: read theirs
      }
    }
    throw new ApiError('conflict', 'This Idempotency-Key is being used by concurrent requests; retry.');
  }

  /** Deletes the account's record of `key` (a batch's attempt whose call was never made: its creator died first). */
  async forget(account: string, key: string): Promise<void> {
    await this.records.deleteOne({ _id: `${account}:${key}` });
  }
}

/** JSON with object keys sorted, so the same body written in another key order hashes the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
