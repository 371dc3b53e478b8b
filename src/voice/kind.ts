// The voice-call actor kind: the machine (machines/voice-call.machine.ts) with its effects bound to
// the call's carrier and media (its in-memory resources: src/voice/media.ts), the Meter and the
// webhook outbox. Once-only steps, keyed by call, so a replay after kill -9 or a takeover neither
// dials, charges nor notifies twice:
//   dial            the carrier asked to place the call (its call id recorded)
//   notify:answered the call.answered event
//   charge          the reservation settled for the answered seconds (released when none)
//   notify:ended    the call.ended event
//   notify:answered_by  the call.answered_by event (a call that asked for answering-machine detection)
//   analysis:*, notify:analyzed  after the charge, a call that asked for an analysis (src/voice/analysis.ts)
// Checkpointed: written when the state moves and on the durable events (an end of any kind, a
// control), otherwise at most every `checkpointMs` (heartbeats and turns). `onOrphan: 'finalize'`:
// a call whose instance died has lost its media (the socket died with the process), so the restored
// actor ends it with `gateway_restart`, billed up to its last checkpointed heartbeat.
// The transcript is the call's own collection (src/voice/transcript.ts), deleted with the actor.
import { fromPromise } from 'xstate';
import type { ActorKind, ActorKindContext, ActorResources } from '../actors/kinds.ts';
import type { Hold, Payer } from '../billing/types.ts';
import type { Meter } from '../metering/meter.ts';
import { priceOfSeconds } from '../billing/pricing.ts';
import type { EventSink } from '../shared/events.ts';
import type { AnalysisRequest } from '../shared/analysis-schema.ts';
import {
  voiceCallMachineOf,
  version,
  type AnalyzeInput,
  type AnsweredByInput,
  type CallAnalysisResult,
  type CallStatus,
  type AnsweredByNews,
  type DialInput,
  type DialOutput,
  type EndReason,
  type FinishInput,
  type FinishOutput,
  type NotifyInput,
  type Turn,
  type TransferInput,
  type TransferOutput,
  type VoiceCallContext,
} from '../../machines/voice-call.machine.ts';

export const VOICE_KIND = 'voice-call';

/** What a call carries for its effects (the machine's `spec`): fixed at creation. */
export interface CallSpecFields {
  payer: Payer;
  hold: Hold;
  requestId: string;
  startedAt: number;
  pricePerMinuteCents: number;
  language: string;
  voice: string;
  /** Calls created before the metadata moved to the machine's input (`VoiceCallInput.metadata`) only. */
  metadata?: Record<string, string>;
  /** The call's `webhook_id`: its events go to that endpoint only. */
  webhookId?: number;
  /** What the call asked to learn once it ends (src/voice/analysis.ts): its `analysis`, or its model's. */
  analysis?: AnalysisRequest;
  /** The agent decides by an intent pack (intent, hybrid): its outcome's intent, actions and entities are the analysis's too. */
  pack?: boolean;
}

/** A call's spec fields for its analysis (src/voice/analysis.ts): what it asked, and whether a pack decides its outcome. */
export const analysisSpec = (c: { analysis: AnalysisRequest | null; intentModel: unknown }): Pick<CallSpecFields, 'analysis' | 'pack'> => ({
  ...(c.analysis ? { analysis: c.analysis } : {}),
  ...(c.intentModel ? { pack: true } : {}),
});

/** Where a call's events go: the account's subscribed endpoints, or the one the call names. */
export const eventTarget = (spec: CallSpecFields) => ({
  owner: { type: spec.payer.ownerType, id: spec.payer.ownerId },
  ...(spec.webhookId !== undefined ? { webhookId: spec.webhookId } : {}),
});

/** The call's live side (carrier and media), as the effects see it: never persisted. */
export interface CallResources extends ActorResources {
  /** Asks the model's carriers (in route order) to place the call; resolves with `<route index>:<the carrier's id for it>`. */
  dial(input: DialInput): Promise<string>;
  /** The call was answered at `at` (the actor's time: the credit guard is timed from it). Idempotent. */
  answered(at: number): void;
  /** Who answered, as the actor took it (once): a machine gets the call's `voicemail` (src/voice/voicemail.ts). */
  answeredBy?(news: AnsweredByNews): void;
  /** The call ends (for `reason`): stop the media and hang up at the carrier if still up (not a `transferred` one's). Idempotent. */
  hangup(reason: EndReason): Promise<void>;
  /**
   * A cold transfer (src/voice/transfer.ts): the hand-off line said (`by` the API), `asking` told
   * (awaited) just before the carrier is asked, then the carrier bridges the callee to `to`;
   * resolves with when it was asked.
   */
  transfer?(to: string, by: 'api' | 'agent', asking?: (at: number) => Promise<unknown>): Promise<number>;
}

export interface VoiceKindDeps {
  meter: Pick<Meter, 'resume'>;
  /**
   * Hangs up a call at its carrier when this instance has no media for it (restored after its
   * instance died): by the carrier's API, through the model's carrier route; then asks the carrier
   * how long the call lasted (null: it does not say). Idempotent.
   */
  hangupOrphan?(model: string, carrierCallId: string): Promise<{ carrierDurationSeconds: number | null }>;
  events: EventSink;
  now(): number;
  checkpointMs: number;
  retainMs: number;
  /** Deletes a call's transcript (src/voice/transcript.ts) when its actor's retention ends; reads it for `call.ended`. */
  transcripts?: { remove(callId: string): Promise<void>; of(account: string, callId: string): Promise<Turn[]> };
  /** The calls' recordings (src/voice/recordings.ts): stored when the call finishes (after a restart too), deleted with the actor. */
  recordings?: { finalize(callId: string): Promise<void>; forget(callId: string): Promise<void> };
  /** The tool requests an orphaned call had in flight, recorded `interrupted` on its transcript (src/voice/tool-journal.ts). */
  toolJournal?: { interrupted(callId: string, account: string): Promise<unknown>; remove(callId: string): Promise<void> };
  /** Runs a call's analysis after its charge (src/voice/analysis.ts). */
  analyzer?: { run(input: AnalyzeInput<CallSpecFields>, ctx: ActorKindContext): Promise<CallAnalysisResult> };
}

/** The call's machine, its `spec` typed as the fields above (the effects read them, the service writes them). */
const voiceCallMachine = voiceCallMachineOf<CallSpecFields>();

export type VoiceKind = ActorKind<typeof voiceCallMachine, CallResources>;

/** The price of `seconds` at a voice model's per-minute price, µ¢. */
export function callPrice(pricePerMinuteCents: number, seconds: number): number {
  return priceOfSeconds({ cents_per_minute: pricePerMinuteCents }, seconds);
}

/** Statuses a call is still active in (counted against the account's concurrent calls). */
const isActiveStatus = (status: string): boolean => status === 'queued' || status === 'dialing' || status === 'ringing' || status === 'in_progress';

export function voiceCallKind(deps: VoiceKindDeps): VoiceKind {
  const { transcripts, recordings } = deps;
  return {
    kind: VOICE_KIND,
    machine: voiceCallMachine,
    version,
    persistence: {
      mode: 'checkpoint',
      intervalMs: deps.checkpointMs,
      durableEvents: ['carrier.ended', 'api.cancel', 'api.hangup', 'api.transfer', 'agent.transfer', 'media.ending', 'action', 'answered_by'],
    },
    onOrphan: 'finalize',
    retainFinishedMs: deps.retainMs,
    migrate: fromVersion1,
    ...(transcripts || recordings
      ? { onRetired: async (id: string) => void (await Promise.all([transcripts?.remove(id), recordings?.forget(id), deps.toolJournal?.remove(id)])) }
      : {}),
    project: ({ context }) => {
      const c = context as VoiceCallContext;
      return {
        account: c.account,
        status: c.status,
        active: isActiveStatus(c.status),
        order: orderKey(c.createdAt, c.callId),
        direction: c.direction ?? 'outbound',
      };
    },
    indexes: [
      { account: 1, order: -1 },
      { account: 1, status: 1, order: -1 },
      { account: 1, direction: 1, order: -1 },
      { account: 1, active: 1 },
      { account: 1, updated_at: -1 },
    ],
    provide: (ctx) => effects(deps, ctx),
  };
}

/**
 * A version 1 snapshot (its transcript inside) restored by this machine: it counts the turns it
 * holds; they stay where they are (the view reads them), and turns told from now on go to the store.
 */
function fromVersion1(persisted: unknown, fromVersion: number): unknown {
  const p = persisted as { context?: Partial<VoiceCallContext> };
  if (fromVersion !== 1 || !p.context || p.context.turnCount !== undefined) return persisted;
  const told = (p.context.turns?.length ?? 0) + (p.context.turnsDropped ?? 0);
  return { ...p, context: { ...p.context, turnCount: told } };
}

/** The calls list's filters (GET /v1/voice/calls), but its cursor. */
export interface CallListFilter {
  status?: CallStatus;
  /** Unix ms: calls changed after it. */
  updatedAfter?: number;
  direction?: 'inbound' | 'outbound';
}

/** The list's filters on the projection. A call stored before `direction` was projected has none: it is outbound unless it says inbound. */
export function listFilter(account: string, f: CallListFilter): Record<string, unknown> {
  const where: Record<string, unknown> = { account };
  if (f.status) where.status = f.status;
  if (f.updatedAfter !== undefined) where.updated_at = { $gt: new Date(f.updatedAfter) };
  if (f.direction) where.direction = f.direction === 'inbound' ? 'inbound' : { $ne: 'inbound' };
  return where;
}

/** Newest first, ties by id: the list's cursor order. */
export function orderKey(createdAt: number, callId: string): string {
  return `${String(createdAt).padStart(15, '0')}:${callId}`;
}

function effects(deps: VoiceKindDeps, ctx: ActorKindContext<CallResources>) {
  const to = eventTarget;
  return {
    actors: {
      analyze: fromPromise<CallAnalysisResult, AnalyzeInput<CallSpecFields>>(async ({ input }) => {
        if (!deps.analyzer) throw new Error('voice call: no analyzer configured');
        return deps.analyzer.run(input, ctx);
      }),
      dial: fromPromise<DialOutput, DialInput>(async ({ input }) => {
        const done = await ctx.steps.done<string>('dial');
        if (done !== undefined) return { carrierCallId: done, at: deps.now() };
        const media = ctx.resources();
        // Restored without its media (its instance died): nothing to dial here; the finalize follows.
        if (!media) return { carrierCallId: null, at: deps.now() };
        const carrierCallId = await ctx.steps.once('dial', () => media.dial(input));
        return { carrierCallId, at: deps.now() };
      }),
      notifyAnswered: fromPromise<void, NotifyInput<CallSpecFields>>(async ({ input }) => {
        const { spec } = input;
        ctx.resources()?.answered(input.answeredAt); // the media times its credit guard from the actor's answer
        await ctx.steps.once('notify:answered', async () => {
          const view = { call_id: input.callId, model: input.model, to: input.to, answered_at: Math.floor(input.answeredAt / 1000) };
          await deps.events.emit({ event: 'call.answered', ...to(spec), fields: view });
          return true;
        });
      }),
      notifyAnsweredBy: fromPromise<void, AnsweredByInput<CallSpecFields>>(async ({ input }) => {
        const { news, spec } = input;
        ctx.resources()?.answeredBy?.(news);
        await ctx.steps
          .once('notify:answered_by', async () => {
            const fields = {
              call_id: input.callId,
              model: input.model,
              to: input.to,
              answered_by: news.answeredBy,
              detail: news.detail,
              decision_ms: news.decisionMs,
            };
            await deps.events.emit({ event: 'call.answered_by', ...to(spec), fields });
            return true;
          })
          .catch((err: unknown) => ctx.logger.warn({ err }, 'call.answered_by was not written')); // a spawned effect never fails the call
      }),
      finish: fromPromise<FinishOutput, FinishInput<CallSpecFields>>(async ({ input }) => {
        const { spec } = input;
        const media = ctx.resources();
        let carrierDurationSeconds: number | null = null;
        if (media) await media.hangup(input.reason);
        // A transferred call is the callee's and the person's now (or may be: a hand-off asked before
        // a crash): never hung up, nor its length asked.
        else if (input.carrierCallId && deps.hangupOrphan && input.reason !== 'transferred' && !input.handOffAsked) {
          // The media died with its instance; the call may still be up at the carrier. What the
          // carrier then says it lasted is kept beside what is billed (up to the last heartbeat).
          const told = await deps
            .hangupOrphan(input.model, input.carrierCallId)
            .catch((err: unknown) => ctx.logger.warn({ err }, 'carrier hang-up of an orphaned call failed'));
          carrierDurationSeconds = told?.carrierDurationSeconds ?? null;
        }
        // An orphan's tool requests in flight: on its transcript as `interrupted` before call.ended reads it.
        if (!media)
          await deps.toolJournal
            ?.interrupted(input.callId, spec.payer.walletId)
            .catch((err: unknown) => ctx.logger.warn({ err }, 'interrupted tool requests were not recorded'));
        // The recording up to the end (up to the crash, for an orphan) is stored; idempotent on a replay.
        await deps.recordings?.finalize(input.callId).catch((err: unknown) => ctx.logger.error({ err }, 'the call recording was not stored'));
        const cost = await ctx.steps.once('charge', async () => {
          const call = deps.meter.resume({
            payer: spec.payer,
            model: input.model,
            modelType: 'voice',
            hold: spec.hold,
            requestId: spec.requestId,
            startedAt: spec.startedAt,
          });
          if (input.billedSeconds === 0) {
            await call.release('ok', { seconds: 0 });
            return 0;
          }
          const price = Math.min(callPrice(spec.pricePerMinuteCents, input.billedSeconds), spec.hold.amountMicrocents);
          await call.settle({ route: null, seconds: input.billedSeconds, costMicrocents: price, status: 'ok' });
          return price;
        });
        await ctx.steps.once('notify:ended', async () => {
          // The transcript and outcome the call's view shows (an integrator's most asked-for fields), as they stand at its end.
          const transcript = (await deps.transcripts?.of(spec.payer.walletId, input.callId)) ?? [];
          await deps.events.emit({
            event: 'call.ended',
            ...to(spec),
            fields: {
              call_id: input.callId,
              model: input.model,
              status: input.status,
              end_reason: input.reason,
              billed_seconds: input.billedSeconds,
              cost_cents: centsOf(cost),
              outcome: input.outcome ?? { actions: [], final_state: null },
              transcript,
              ...(input.transferTo ? { transferred_to: input.transferTo } : {}),
            },
          });
          return true;
        });
        return { costMicrocents: cost, carrierDurationSeconds, at: deps.now() };
      }),
      transfer: fromPromise<TransferOutput, TransferInput<CallSpecFields>>(async ({ input }) => {
        // Once: a restored actor finds the carrier's hand-off done (the call ends `transferred`
        // then), or, its media gone before the carrier took it, ends the call where it was last alive.
        // `transfer:asked` is written before the carrier is asked: a restart that finds it without
        // `transfer` cannot know whether the carrier took the hand-off, and never hangs the call up.
        let at = await ctx.steps.done<number>('transfer');
        if (at === undefined) {
          const media = ctx.resources();
          if (!media) {
            const asked = await ctx.steps.done<number>('transfer:asked');
            return asked === undefined ? { transferred: false, at: input.lastAliveAt ?? deps.now() } : { transferred: false, asked: true, at: asked };
          }
          if (!media.transfer) throw new Error('this call cannot be transferred');
          const asking = (when: number) => ctx.steps.once('transfer:asked', async () => when);
          at = await ctx.steps.once('transfer', () => media.transfer!(input.to, input.by, asking));
        }
        const when = at;
        await ctx.steps.once('notify:transferred', async () => {
          const fields = { call_id: input.callId, model: input.model, transferred_to: input.to, transferred_at: Math.floor(when / 1000) };
          await deps.events.emit({ event: 'call.transferred', ...to(input.spec), fields });
          return true;
        });
        return { transferred: true, at: when };
      }),
    },
  };
}

/** µ¢ as cents for a client (fractions kept to the µ¢). */
export const centsOf = (microcents: number): number => Math.round(microcents) / 1_000_000;
