// POST /v1/voice/calls/{id}/transfer's rules (the cold transfer itself: src/voice/transfer.ts).
import type { ActorView } from '../actors/record.ts';
import type { ActorRuntime } from '../actors/runtime.ts';
import { ApiError } from '../errors.ts';
import type { ModelCatalog } from '../models/catalog.ts';
import type { ControlReply } from '../../machines/voice-call.machine.ts';
import { destination } from './checks.ts';
import type { VoiceKind } from './kind.ts';
import { facts } from './view.ts';

export interface TransferRequestDeps {
  runtime: Pick<ActorRuntime, 'ref'>;
  kind: VoiceKind;
  models: Pick<ModelCatalog, 'get'>;
  /** Whether the call's live side (when it is on this instance) has a carrier that can transfer; undefined: not here. */
  canTransfer(callId: string): boolean | undefined;
  now(): number;
}

/**
 * POST /v1/voice/calls/{id}/transfer for the call's owner (`view`, read by the service): a call in
 * progress only (else 409 `call_not_active`), `to` checked against the model's `countries` as a
 * call's `to` is, then the actor asked (`api.transfer`). The call answers as it stands: still
 * `in_progress`, ending `transferred` once the hand-off line played and the carrier took it.
 */
export async function requestTransfer(deps: TransferRequestDeps, view: ActorView, to: string): Promise<void> {
  const c = facts(view)!;
  const refused = (status: string) => new ApiError('call_not_active', `The call is ${status}: only a call in progress can be transferred.`, { param: 'id' });
  if (view.status !== 'active' || c.status !== 'in_progress') throw refused(view.status === 'active' ? c.status : (c.status ?? 'over'));
  const model = await deps.models.get(c.model);
  if (!model) throw refused('without its model');
  destination(model, to, 'to');
  if (deps.canTransfer(c.callId) === false) {
    throw new ApiError('invalid_request', "The call's carrier route cannot transfer a call (an Exotel route needs a flow: its app_id).", { param: 'id' });
  }
  const { reply } = await deps.runtime.ref(deps.kind, c.callId).ask<ControlReply>({ type: 'api.transfer', now: deps.now(), to }, { wait: 'durable' });
  if (!reply.ok) throw refused(reply.status === 'in_progress' ? 'being transferred already' : reply.status);
}
