// One outbound AI voice call as an actor (POST /v1/voice/call). Pure: every effect is invoked by name
// and injected by the runtime (src/voice/kind.ts); no I/O, and no clock: times come in events
// (`now`) and effect outputs, and the deadlines are computed from timestamps kept in context, so a
// restore re-arms them (a `runtime.resumed` re-enters the state, whose `after` delays are recomputed).
//
// Control states (the call's `status`):
//   connecting.dialing → connecting.ringing → in_progress → ending → ended (final)
// `dial` asks the carrier to place the call (a once-only step: a replay never dials twice); the
// carrier's progress comes back as events (`carrier.ringing`, `carrier.answered`, `carrier.ended`).
// A call not answered by `ringTimeoutMs` after its creation ends `no_answer` (`ring_timeout`); an
// answered one ends at `maxDurationMs` after its answer at the latest: `max_duration`, or
// `insufficient_credit` when the wallet covered less than the call's maximum (the reservation made
// at creation is then the credit guard: the wallet never goes below zero). `ending` hangs up
// (when the media is still ours), charges the answered seconds once and notifies, then `ended`.
//
// The media loop (carrier socket, VAD, recogniser, agent, playback) is the actor's in-memory
// resource and never persisted: it sends control events only (a turn heard or spoken, an action
// taken, a heartbeat while the call lives, an end it decided). After a kill -9 the kind's
// `onOrphan: 'finalize'` ends the call with `gateway_restart`, billed up to its last heartbeat.
//
// The transcript is not kept here: the live side appends each turn to the call's own transcript in
// the store (src/voice/transcript.ts, before the actor hears of it) and the machine counts the turns
// and keeps their metrics (latencies, interruptions, the agent's state). The snapshot so stays the
// same few kilobytes however long the call: before, every turn's text (twice for an agent's) was in
// it, and about 30 long LLM replies reached the runtime's snapshot limit.
import { assign, emit, fromPromise, setup, spawnChild } from 'xstate';

/** 2: the transcript moved out of the snapshot (`turnCount`; a version 1 snapshot's `turns` stay, read by the view). */
export const version = 2;

import type {
  AnalyzeInput,
  AnsweredByInput,
  CallAnalysisResult,
  CallSpec,
  CallStatus,
  ControlReply,
  DialInput,
  DialOutput,
  EndReason,
  FinalStatus,
  FinishInput,
  FinishOutput,
  NotifyInput,
  TransferInput,
  TransferOutput,
  VoiceCallContext,
  VoiceCallEvent,
  VoiceCallInput,
} from './voice-call.types.ts';

export * from './voice-call.types.ts';

const MAX_LATENCIES = 200;

/** Answered seconds, rounded up, never past the call's maximum (what the reservation covers). */
export function billableSeconds(answeredAt: number | null, endedAt: number, maxDurationMs: number): number {
  if (answeredAt === null) return 0;
  return Math.max(0, Math.min(Math.ceil(Math.max(0, endedAt - answeredAt) / 1000 - 1e-9), Math.ceil(maxDurationMs / 1000)));
}

/**
 * Why a dial that every route refused ends the call: the carrier refused the route's credentials,
 * when its error says so (its `endReason`, src/providers/carrier.ts's `CarrierCredentialsRefused`), else
 * `carrier_unavailable`.
 */
export const dialFailure = (error: unknown): EndReason =>
  typeof error === 'object' && error !== null && (error as { endReason?: unknown }).endReason === 'carrier_credentials_refused'
    ? 'carrier_credentials_refused'
    : 'carrier_unavailable';

const nowOf = (context: VoiceCallContext, event: VoiceCallEvent): number => ('now' in event ? Math.max(context.now, event.now) : context.now);
/** One more turn told (the turn itself is in the call's transcript, not here). */
const counted = (context: VoiceCallContext): Pick<VoiceCallContext, 'turnCount'> => ({ turnCount: (context.turnCount ?? 0) + 1 });

/** An answered call reaching its maximum: `insufficient_credit` when the wallet set it, else `max_duration`. */
const atMaximum = ({ context }: { context: VoiceCallContext }) => ({
  status: 'completed' as const,
  reason: context.creditLimited ? ('insufficient_credit' as const) : ('max_duration' as const),
  at: context.answeredAt! + context.maxDurationMs,
});

/** The machine, its `spec` typed as `Spec` (the kind's fields; the machine never reads them). */
export function voiceCallMachineOf<Spec extends CallSpec = CallSpec>() {
  return setup({
    types: {
      context: {} as VoiceCallContext<Spec>,
      events: {} as VoiceCallEvent,
      input: {} as VoiceCallInput<Spec>,
      emitted: {} as ControlReply,
    },
    actors: {
      dial: fromPromise<DialOutput, DialInput>(async () => {
        throw new Error('voice call: dial not provided');
      }),
      notifyAnswered: fromPromise<void, NotifyInput<Spec>>(async () => {
        throw new Error('voice call: notifyAnswered not provided');
      }),
      finish: fromPromise<FinishOutput, FinishInput<Spec>>(async () => {
        throw new Error('voice call: finish not provided');
      }),
      transfer: fromPromise<TransferOutput, TransferInput<Spec>>(async () => {
        throw new Error('voice call: transfer not provided');
      }),
      /** The call's analysis after its charge (src/voice/analysis.ts): an llm reads the transcript; never throws for an upstream's failure. */
      analyze: fromPromise<CallAnalysisResult, AnalyzeInput<Spec>>(async () => {
        throw new Error('voice call: analyze not provided');
      }),
      /** Who answered: told the live side (a machine's voicemail) and the webhooks, once. */
      notifyAnsweredBy: fromPromise<void, AnsweredByInput<Spec>>(async () => {
        throw new Error('voice call: notifyAnsweredBy not provided');
      }),
    },
    delays: {
      ringDeadline: ({ context }) => Math.max(0, context.createdAt + context.ringTimeoutMs - context.now),
      callDeadline: ({ context }) => Math.max(0, (context.answeredAt ?? context.now) + context.maxDurationMs - context.now),
    },
    actions: {
      /** The call ends with this status and reason, at `at` (default: the event's time); `ending` bills it. */
      end: assign(({ context, event }, params: { status: FinalStatus; reason: EndReason; at?: number | null }) => ({
        now: nowOf(context, event),
        status: params.status,
        endReason: params.reason,
        endedAt: params.at ?? nowOf(context, event),
      })),
      // The answer to a control (`ask`): taken, or refused as the call stands.
      accepted: emit(({ context }) => ({ type: 'control.result' as const, ok: true, status: context.status })),
      refused: emit(({ context }) => ({ type: 'control.result' as const, ok: false, status: context.status })),
      charged: assign(({ event }) => {
        const output = (event as { output?: FinishOutput }).output!;
        return { costMicrocents: output.costMicrocents, carrierDurationSeconds: output.carrierDurationSeconds ?? null };
      }),
      handingOff: assign(({ context, event }) => ({ now: nowOf(context, event), transferTo: 'to' in event ? event.to : null })),
    },
    guards: {
      finalizing: ({ event }) => event.type === 'runtime.resumed' && event.mode === 'finalize',
      analyzes: ({ context }) => context.analyze === true,
    },
  }).createMachine({
    id: 'voice-call',
    context: ({ input }) => ({
      ...input,
      status: 'dialing' as CallStatus,
      endReason: null,
      now: input.createdAt,
      carrierCallId: null,
      dialStartedAt: input.createdAt,
      ringingAt: null,
      answeredAt: null,
      endedAt: null,
      lastAliveAt: null,
      billedSeconds: null,
      costMicrocents: null,
      turnCount: 0,
      actions: [],
      agentState: null,
      latencies: [],
      interruptions: 0,
    }),
    initial: 'connecting',
    on: {
      // Refused wherever a state does not take them.
      'api.cancel': { actions: 'refused' },
      'api.hangup': { actions: 'refused' },
      'api.transfer': { actions: 'refused' },
    },
    states: {
      connecting: {
        initial: 'dialing',
        invoke: {
          id: 'dial',
          src: 'dial',
          input: ({ context }) => ({ to: context.to, from: context.from, ringTimeoutMs: context.ringTimeoutMs, maxDurationMs: context.maxDurationMs }),
          onDone: { actions: assign(({ context, event }) => ({ carrierCallId: event.output.carrierCallId ?? context.carrierCallId })) },
          onError: { target: 'ending', actions: { type: 'end', params: ({ event }) => ({ status: 'failed', reason: dialFailure(event.error) }) } },
        },
        after: {
          ringDeadline: {
            target: 'ending',
            actions: { type: 'end', params: ({ context }) => ({ status: 'no_answer', reason: 'ring_timeout', at: context.createdAt + context.ringTimeoutMs }) },
          },
        },
        on: {
          'carrier.answered': {
            target: 'in_progress',
            // Never before the dial: a carrier's duration (a `completed` callback's, backdated from its
            // arrival) bills at most the call's age, and never more than the carrier counted.
            actions: assign(({ context, event }) => ({
              now: nowOf(context, event),
              answeredAt: Math.max(event.now, context.dialStartedAt ?? context.createdAt),
              lastAliveAt: Math.max(event.now, context.dialStartedAt ?? context.createdAt),
              status: 'in_progress' as const,
            })),
          },
          'carrier.ended': {
            target: 'ending',
            actions: {
              type: 'end',
              params: ({ event }) => {
                const status = event.status ?? 'failed';
                return { status, reason: event.reason ?? (status === 'busy' ? 'dial_busy' : status === 'no_answer' ? 'ring_timeout' : 'dial_failed') };
              },
            },
          },
          'api.cancel': { target: 'ending', actions: ['accepted', { type: 'end', params: { status: 'canceled', reason: 'api_hangup' } }] },
          'media.ending': { target: 'ending', actions: { type: 'end', params: ({ event }) => ({ status: 'failed', reason: event.reason }) } },
          'runtime.resumed': [
            { guard: 'finalizing', target: 'ending', actions: { type: 'end', params: { status: 'failed', reason: 'gateway_restart' } } },
            // This instance kept the media: the same state again, its deadline re-armed from `now`.
            { target: 'connecting', reenter: true, actions: assign(({ context, event }) => ({ now: nowOf(context, event) })) },
          ],
        },
        states: {
          dialing: {
            on: {
              'carrier.ringing': {
                target: 'ringing',
                actions: assign(({ context, event }) => ({ now: nowOf(context, event), ringingAt: event.now, status: 'ringing' as const })),
              },
            },
          },
          ringing: {},
        },
      },
      in_progress: {
        invoke: {
          id: 'notifyAnswered',
          src: 'notifyAnswered',
          input: ({ context }) => ({ callId: context.callId, model: context.model, to: context.to, answeredAt: context.answeredAt!, spec: context.spec }),
          // The event is in the durable outbox or it is not: a failure to write it does not end the call.
          onError: {},
        },
        after: {
          callDeadline: {
            target: 'ending',
            actions: { type: 'end', params: atMaximum },
          },
        },
        on: {
          'carrier.ended': {
            target: 'ending',
            // Its news may come late: billed never more than the seconds the carrier counted.
            actions: {
              type: 'end',
              params: ({ context, event }) => ({
                status: 'completed',
                reason: 'callee_hangup',
                at: event.seconds ? Math.min(nowOf(context, event), context.answeredAt! + event.seconds * 1000) : null,
              }),
            },
          },
          'api.hangup': { target: 'ending', actions: ['accepted', { type: 'end', params: { status: 'completed', reason: 'api_hangup' } }] },
          'api.transfer': { target: 'transferring', actions: ['handingOff', 'accepted'] },
          'agent.transfer': { target: 'transferring', actions: 'handingOff' },
          'media.ending': { target: 'ending', actions: { type: 'end', params: ({ event }) => ({ status: 'completed', reason: event.reason }) } },
          'media.heartbeat': { actions: assign(({ context, event }) => ({ now: nowOf(context, event), lastAliveAt: event.now })) },
          turn: {
            actions: assign(({ context, event }) => {
              return {
                now: nowOf(context, event),
                lastAliveAt: event.now,
                ...counted(context),
                latencies: event.latencyMs === undefined ? context.latencies : [...context.latencies, event.latencyMs].slice(-MAX_LATENCIES),
                interruptions: context.interruptions + (event.interrupted ? 1 : 0),
                agentState: event.agentState ?? context.agentState,
              };
            }),
          },
          action: { actions: assign(({ context, event }) => ({ now: nowOf(context, event), actions: [...context.actions, event.action].slice(-50) })) },
          answered_by: {
            guard: ({ context }) => !context.answeredBy,
            actions: [
              assign(({ context, event }) => {
                const { type: _type, now: _now, ...news } = event;
                return { now: nowOf(context, event), answeredBy: news };
              }),
              spawnChild('notifyAnsweredBy', {
                id: 'notifyAnsweredBy',
                input: ({ context }) => ({ callId: context.callId, model: context.model, to: context.to, news: context.answeredBy!, spec: context.spec }),
              }),
            ],
          },
          'runtime.resumed': [
            {
              // The media died with its instance: the call ends where the last heartbeat saw it alive.
              guard: 'finalizing',
              target: 'ending',
              actions: {
                type: 'end',
                params: ({ context }) => ({ status: 'completed', reason: 'gateway_restart', at: context.lastAliveAt ?? context.answeredAt }),
              },
            },
            { target: 'in_progress', reenter: true, actions: assign(({ context, event }) => ({ now: nowOf(context, event) })) },
          ],
        },
      },
      // A cold transfer (src/voice/transfer.ts): still `in_progress` to the client. The live side says
      // the hand-off line (an API transfer's) and asks the carrier to bridge the callee to the number;
      // the call then ends `transferred` at that moment. The hang-up, the end of the media and the
      // call's maximum end it as they would in progress. After a restart the restored `transfer`
      // step decides: taken by the carrier before the crash, `transferred`; else `gateway_restart`.
      transferring: {
        invoke: {
          id: 'transfer',
          src: 'transfer',
          input: ({ context, event }) => ({
            callId: context.callId,
            spec: context.spec,
            model: context.model,
            to: context.transferTo!,
            by: event.type === 'agent.transfer' ? ('agent' as const) : ('api' as const),
            lastAliveAt: context.lastAliveAt,
          }),
          onDone: {
            target: 'ending',
            actions: [
              {
                type: 'end',
                params: ({ context, event }) =>
                  event.output.transferred
                    ? { status: 'completed', reason: 'transferred', at: event.output.at }
                    : {
                        status: 'completed',
                        reason: 'gateway_restart',
                        at: event.output.asked ? event.output.at : (context.lastAliveAt ?? context.answeredAt),
                      },
              },
              // Asked, its answer lost to a restart: the gateway's part ended at the ask; the call may be the person's.
              assign(({ event }) => (event.output.asked ? { handOffAsked: true } : {})),
            ],
          },
          // The carrier refused the hand-off: the call goes on with the agent.
          onError: { target: 'in_progress', actions: assign({ transferTo: null }) },
        },
        // The deadline lives in a child state, so a resume re-arms it by re-entering the child
        // alone: re-entering `transferring` would restart the `transfer` step (a second hand-off).
        initial: 'handingOff',
        states: {
          handingOff: {
            // The restored `transfer` step decides (above); the deadline is re-armed from `now`.
            on: { 'runtime.resumed': { target: 'handingOff', reenter: true, actions: assign(({ context, event }) => ({ now: nowOf(context, event) })) } },
            after: {
              callDeadline: {
                target: '#voice-call.ending',
                actions: { type: 'end', params: atMaximum },
              },
            },
          },
        },
        on: {
          'carrier.ended': { target: 'ending', actions: { type: 'end', params: { status: 'completed', reason: 'callee_hangup' } } },
          'api.hangup': { target: 'ending', actions: ['accepted', { type: 'end', params: { status: 'completed', reason: 'api_hangup' } }] },
          'media.ending': { target: 'ending', actions: { type: 'end', params: ({ event }) => ({ status: 'completed', reason: event.reason }) } },
          'media.heartbeat': { actions: assign(({ context, event }) => ({ now: nowOf(context, event), lastAliveAt: event.now })) },
          turn: { actions: assign(({ context, event }) => ({ now: nowOf(context, event), lastAliveAt: event.now, ...counted(context) })) },
        },
      },
      ending: {
        entry: assign(({ context }) => ({ billedSeconds: billableSeconds(context.answeredAt, context.endedAt ?? context.now, context.maxDurationMs) })),
        invoke: {
          id: 'finish',
          src: 'finish',
          input: ({ context }) => ({
            callId: context.callId,
            carrierCallId: context.carrierCallId,
            model: context.model,
            status: context.status as FinalStatus,
            reason: context.endReason!,
            billedSeconds: context.billedSeconds ?? 0,
            spec: context.spec,
            outcome: { actions: context.actions, final_state: context.agentState },
            transferTo: context.endReason === 'transferred' ? (context.transferTo ?? null) : null,
            ...(context.handOffAsked ? { handOffAsked: true } : {}),
          }),
          onDone: [
            { guard: 'analyzes', target: 'analyzing', actions: 'charged' },
            { target: 'ended', actions: 'charged' },
          ],
          // Billing unreachable: the call still ends; the reservation's TTL returns what it held (an analysis still runs, and ends).
          onError: [{ guard: 'analyzes', target: 'analyzing' }, { target: 'ended' }],
        },
        on: {
          // Late news changes nothing: the call is over (still counted: the transcript's end).
          turn: { actions: assign(({ context }) => counted(context)) },
        },
      },
      // After the charge (issue 43 §2): the call's status, end reason and bill are final, its media
      // gone; an llm reads the transcript (src/voice/analysis.ts, once-only steps inside: a restore
      // re-runs the invoke, and nothing is billed twice). A failure is the analysis's, never the call's.
      analyzing: {
        invoke: {
          id: 'analyze',
          src: 'analyze',
          input: ({ context }) => ({
            callId: context.callId,
            model: context.model,
            spec: context.spec,
            outcome: { actions: context.actions, final_state: context.agentState },
          }),
          onDone: { target: 'ended', actions: assign(({ event }) => ({ analysis: event.output })) },
          onError: {
            target: 'ended',
            actions: assign(({ context }) => ({
              analysis: {
                ...{ status: 'failed' as const, model: null, summary: null, fields: {}, usage: null, costMicrocents: 0, attempts: 0 },
                ...{ error: { code: 'internal_error', message: 'The analysis did not run.' }, at: context.now },
              },
            })),
          },
        },
      },
      ended: { type: 'final' },
    },
  });
}

/** The machine with an untyped `spec` (the machine's own tests). */
export const voiceCallMachine = voiceCallMachineOf();
