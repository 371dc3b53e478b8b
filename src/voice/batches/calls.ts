// The calls as a batch sees them (pacing.ts's BatchCallsPort): placed through VoiceCalls.create,
// the code of POST /v1/voice/call (its checks, its reservation, its 402 and 429, its Idempotency-Key),
// under the batch owner's principal; read from the call actor's stored view (its projection: the
// actor's status and context), whichever instance holds the call, so a restarted batch reads the
// ends it missed the same way.
import type { ActorRuntime } from '../../actors/runtime.ts';
import { ApiError } from '../../errors.ts';
import type { Payer } from '../../billing/types.ts';
import type { ApiKeyPrincipal } from '../../identity/keys.ts';
import type { ModelDoc } from '../../models/types.ts';
import { check, type CheckDeps, type VoiceCallBody } from '../checks.ts';
import type { IdempotencyKeys } from '../idempotency.ts';
import { VOICE_KIND } from '../kind.ts';
import type { VoiceCalls } from '../service.ts';
import { facts } from '../view.ts';
import type { BatchCallsPort, CallEnd } from './pacing.ts';

export interface BatchCallsDeps {
  voice: Pick<VoiceCalls, 'create'>;
  runtime: Pick<ActorRuntime, 'get' | 'subscribe'>;
  keys: Pick<IdempotencyKeys, 'forget'>;
  check: CheckDeps;
  payerFor(principal: ApiKeyPrincipal): Promise<Payer>;
  models: { resolve(id: string, type: 'voice', account: string): Promise<ModelDoc> };
}

const FINAL = new Set(['completed', 'busy', 'no_answer', 'failed', 'canceled']);

/**
 * `ended(batchId)` is told when a call this instance placed for the batch has stored its end (the
 * runtime's listener on the call: calls held elsewhere are read at the batch's next poll).
 */
export function batchCalls(deps: BatchCallsDeps, ended: (batchId: string) => void): BatchCallsPort {
  return {
    async place(principal, body, key) {
      const { call } = await deps.voice.create(principal, body, key, key);
      const batchId = key.slice(0, key.indexOf(':'));
      const stop = deps.runtime.subscribe(VOICE_KIND, call.id, (view) => {
        if (view.status === 'active') return;
        stop();
        ended(batchId);
      });
      return call.id;
    },
    async forgetKey(principal, key) {
      await deps.keys.forget((await deps.payerFor(principal)).walletId, key);
    },
    async ended(callId): Promise<CallEnd | null | 'missing'> {
      const view = await deps.runtime.get(VOICE_KIND, callId).catch(() => null);
      const c = view ? facts(view) : null;
      if (!view || !c) return 'missing';
      // Ended once billed: the charge is the call's last step before its end.
      if (!FINAL.has(c.status) || c.costMicrocents === null || c.costMicrocents === undefined) return null;
      return {
        status: c.status,
        end_reason: c.endReason ?? null,
        started_at: c.dialStartedAt ?? c.createdAt,
        ended_at: c.endedAt ?? null,
        billed_seconds: c.billedSeconds ?? 0,
        cost_microcents: c.costMicrocents, // exact (a fraction of a µ¢ at per-second prices): the wallet carries the fractions, so the sum is what it charged
      };
    },
    async affordable(principal, body: VoiceCallBody) {
      try {
        const payer = await deps.payerFor(principal);
        await check(deps.check, await deps.models.resolve(body.model, 'voice', payer.walletId), payer, body);
        return true;
      } catch (err) {
        if (err instanceof ApiError && err.code === 'insufficient_credit') return false;
        return true; // any other refusal is the placing's to record
      }
    },
  };
}
