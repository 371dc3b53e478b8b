// A usage record as its wallet's outbox keeps it: a positional array, read back field for field.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeEntry, encodeEntry } from '../../src/billing/usage-entry.ts';
import type { UsageRecordDoc } from '../../src/billing/usage.ts';

const wallet = { _id: 'user:7', owner_type: 'user', owner_id: 7 } as const;
const base = { owner: wallet._id, owner_type: wallet.owner_type, owner_id: wallet.owner_id };

describe('usage entries', () => {
  it('every field comes back as written, each in its own place', () => {
    // Distinct values everywhere: two fields swapped in the encoding would not decode equal.
    const full: UsageRecordDoc = {
      ...base,
      _id: 'rec-1',
      ts: new Date(1_795_000_000_123),
      request_id: 'req_1',
      user_id: 11,
      key_id: 31,
      key_prefix: 'sk-abc',
      model: 'chat-a',
      model_type: 'llm',
      route: 'chat-a#0',
      status: 'ok',
      latency_ms: 42,
      cost_uc: 1234,
      prompt_tokens: 12,
      completion_tokens: 7,
      cached_tokens: 3,
      seconds: 1.5,
      characters: 99,
      calls: 2,
      end_user: 'end-user-1',
      held_at: 1_794_999_999_001,
      reserved_tokens: 4096,
      reserved_uc: 5678,
    };
    const entry = encodeEntry(full);
    assert.deepEqual(decodeEntry(entry, wallet), full);
    assert.equal(JSON.parse(entry).length, 22);
  });

  it('absent fields are left out: trailing ones not written at all, a null route kept', () => {
    const lean: UsageRecordDoc = {
      ...base,
      _id: 'rec-2',
      ts: new Date(1_795_000_000_456),
      request_id: 'req_2',
      user_id: 11,
      key_id: 31,
      key_prefix: 'sk-abc',
      model: 'chat-a',
      model_type: 'llm',
      route: null,
      status: 'upstream_failed',
      latency_ms: 5,
      cost_uc: 0,
      prompt_tokens: 0,
    };
    const entry = encodeEntry(lean);
    assert.equal(JSON.parse(entry).length, 13, entry);
    assert.deepEqual(decodeEntry(entry, wallet), lean);
    const withUndefined = { ...lean, end_user: undefined, seconds: undefined } as unknown as UsageRecordDoc;
    assert.equal(encodeEntry(withUndefined), entry, 'an undefined field is an absent one');
  });
});
