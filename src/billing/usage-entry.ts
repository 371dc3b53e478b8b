// A usage record as its wallet's outbox keeps it (`usage_outbox`, see billing/usage.ts): one compact
// string written by the settle's own wallet write, so the debit and the record reach the disk
// together. A positional JSON array: no field names, nothing the wallet already says (the account),
// trailing absent fields left out; about 150 bytes. A string, not an object, because msgpack (the
// embedded store's encoding) writes strings several times faster than objects, and because the
// flusher then removes it with a plain `$pull` of the value.
import type { WalletDoc } from './money.ts';
import type { UsageRecordDoc } from './usage.ts';

/** The record's own fields, in order (`ts` as epoch ms). Append new ones at the end only. */
const FIELDS = [
  '_id',
  'ts',
  'request_id',
  'user_id',
  'key_id',
  'key_prefix',
  'model',
  'model_type',
  'route',
  'status',
  'latency_ms',
  'cost_uc',
  'prompt_tokens',
  'completion_tokens',
  'cached_tokens',
  'seconds',
  'characters',
  'calls',
  'end_user',
  'held_at',
  'reserved_tokens',
  'reserved_uc',
] as const;

/** Fields every record has (the others are left out when absent). */
const REQUIRED = new Set<string>(['_id', 'ts', 'request_id', 'user_id', 'key_prefix', 'model', 'model_type', 'route', 'status', 'latency_ms', 'cost_uc']);

// Read by name in FIELDS' order (a test holds the two to the same order): records come in many
// shapes (their optional fields), and a loop of keyed reads over them cost ~4 µs of every call.
export function encodeEntry(r: UsageRecordDoc): string {
  const values: unknown[] = [
    r._id,
    r.ts.getTime(),
    r.request_id,
    r.user_id,
    r.key_id,
    r.key_prefix,
    r.model,
    r.model_type,
    r.route,
    r.status,
    r.latency_ms,
    r.cost_uc,
    r.prompt_tokens,
    r.completion_tokens,
    r.cached_tokens,
    r.seconds,
    r.characters,
    r.calls,
    r.end_user,
    r.held_at,
    r.reserved_tokens,
    r.reserved_uc,
  ];
  let n = values.length;
  while (n > 0 && (values[n - 1] ?? null) === null) n--;
  values.length = n;
  for (let i = 0; i < n; i++) values[i] ??= null;
  return JSON.stringify(values);
}

/** The record an entry holds, on `wallet`'s account; null when the entry is not one (reported by the caller). */
export function decodeEntry(entry: string, wallet: Pick<WalletDoc, '_id' | 'owner_type' | 'owner_id'>): UsageRecordDoc | null {
  let values: unknown;
  try {
    values = JSON.parse(entry);
  } catch {
    return null;
  }
  if (!Array.isArray(values)) return null;
  const doc: Record<string, unknown> = { owner: wallet._id, owner_type: wallet.owner_type, owner_id: wallet.owner_id };
  for (const [i, f] of FIELDS.entries()) {
    const v: unknown = values[i] ?? null;
    if (v === null && f !== 'route') {
      if (REQUIRED.has(f)) return null;
      continue;
    }
    doc[f] = f === 'ts' ? new Date(v as number) : v;
  }
  const r = doc as UsageRecordDoc;
  return typeof r._id === 'string' && !Number.isNaN(r.ts.getTime()) && typeof r.cost_uc === 'number' ? r : null;
}
