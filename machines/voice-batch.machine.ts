// One voice batch (a campaign: POST /v1/voice/batches) as an actor. Pure: its effects are invoked by
// name and injected by the runtime (src/voice/batches/kind.ts); no I/O and no clock (times come in
// events and effect outputs; deadlines are kept in context, so a restore re-arms them).
//
// The numbers are not here: they are rows in their own collection (src/voice/batches/rows.ts). The
// actor loops `ticking` ↔ `sleeping`: a `tick` (src/voice/batches/pacing.ts) reads the calls in
// progress and records the ended ones, then, as the batch's status asks, places calls up to
// `max_concurrent` inside the window (`place`), checks the wallet first (`probe`, paused for credit),
// only reads (`drain`, paused by the API) or cancels the rows not dialled (`cancel`), and answers
// what it found. `decide` (below) turns that into the batch's status and when to tick next:
//   scheduled → running ⇄ waiting_window, ⇄ paused (api | insufficient_credit), → cancelling
//   → completed | canceled (final): completed when every row has a final status.
// A restore (`runtime.resumed`) ticks at once: the tick is idempotent (it reads the rows).
import { assign, emit, enqueueActions, fromPromise, setup } from 'xstate';

export const version = 1;

export type BatchStatus = 'scheduled' | 'running' | 'waiting_window' | 'paused' | 'cancelling' | 'canceled' | 'completed';
export type PausedReason = 'api' | 'insufficient_credit';
export type TickMode = 'place' | 'probe' | 'drain' | 'cancel';

/** Opaque to the machine: what the effects need (the owner, the call template, window, retry…). */
export type BatchSpec = object;

export interface RowCounts {
  total: number;
  queued: number;
  in_progress: number;
  completed: number;
  busy: number;
  no_answer: number;
  failed: number;
  voicemail: number;
  canceled: number;
  invalid: number;
}

export interface BatchTiming {
  /** How often a batch with calls in progress (or waiting for room) ticks. */
  pollMs: number;
  /** How often a batch paused for credit checks the wallet again. */
  creditRecheckMs: number;
  /** The longest sleep: a wake-up checks the clock again (a clock that jumped, a lost timer). */
  maxSleepMs: number;
}

export interface VoiceBatchInput<Spec extends BatchSpec = BatchSpec> {
  batchId: string;
  account: string;
  createdAt: number;
  startAt: number;
  counts: RowCounts;
  timing: BatchTiming;
  spec: Spec;
}

export interface VoiceBatchContext<Spec extends BatchSpec = BatchSpec> extends VoiceBatchInput<Spec> {
  now: number;
  status: BatchStatus;
  pausedReason: PausedReason | null;
  startedAt: number | null;
  endedAt: number | null;
  nextWindowAt: number | null;
  wakeAt: number | null;
  costMicrocents: number;
  /** Notifications sent so far (each a once-only step keyed by its number). */
  notices: number;
}

export interface TickInput<Spec extends BatchSpec = BatchSpec> {
  batchId: string;
  account: string;
  mode: TickMode;
  spec: Spec;
  /** The cost the last tick found: kept when this one records no attempt (a sum over the rows otherwise). */
  costMicrocents?: number;
}

export interface TickOutput {
  at: number;
  counts: RowCounts;
  costMicrocents: number;
  inWindow: boolean;
  /** When the window next opens (now when open). */
  nextWindowAt: number;
  /** The soonest a queued row may be dialled (null: none queued). */
  nextDueAt: number | null;
  /** Why placing stopped: the wallet (402) or the account's calls at once (429); null: it did not. */
  refused: 'insufficient_credit' | 'concurrency' | null;
}

export interface NoticeInput<Spec extends BatchSpec = BatchSpec> {
  step: string;
  event: 'batch.started' | 'batch.paused' | 'batch.resumed' | 'batch.completed';
  fields: Record<string, unknown>;
  spec: Spec;
}

export type ControlReply = { type: 'control'; ok: boolean; status: BatchStatus };

export type VoiceBatchEvent =
  | { type: 'api.pause'; now: number }
  | { type: 'api.resume'; now: number }
  | { type: 'api.cancel'; now: number }
  /** Something changed outside (a call ended, the wallet was topped up): tick now. */
  | { type: 'nudge'; now: number }
  | { type: 'runtime.resumed'; now: number; mode: 'resume' | 'finalize' };

export const modeOf = (c: Pick<VoiceBatchContext, 'status' | 'pausedReason'>): TickMode =>
  c.status === 'cancelling' ? 'cancel' : c.status === 'paused' ? (c.pausedReason === 'api' ? 'drain' : 'probe') : 'place';

/** The batch's next status, pause reason and wake-up from a tick's findings (pure). */
export function decide(
  c: VoiceBatchContext,
  out: TickOutput,
): { status: BatchStatus; pausedReason: PausedReason | null; nextWindowAt: number | null; wakeAt: number | null } {
  const { pollMs, creditRecheckMs } = c.timing;
  const busy = out.counts.in_progress > 0;
  const poll = out.at + pollMs;
  if (out.counts.queued === 0 && !busy)
    return { status: c.status === 'cancelling' ? 'canceled' : 'completed', pausedReason: null, nextWindowAt: null, wakeAt: null };
  if (c.status === 'cancelling') return { status: 'cancelling', pausedReason: null, nextWindowAt: null, wakeAt: poll };
  if (c.status === 'paused' && c.pausedReason === 'api') return { status: 'paused', pausedReason: 'api', nextWindowAt: null, wakeAt: busy ? poll : null };
  if (out.refused === 'insufficient_credit') {
    return { status: 'paused', pausedReason: 'insufficient_credit', nextWindowAt: null, wakeAt: Math.min(out.at + creditRecheckMs, busy ? poll : Infinity) };
  }
  if (!out.inWindow)
    return { status: 'waiting_window', pausedReason: null, nextWindowAt: out.nextWindowAt, wakeAt: busy ? Math.min(poll, out.nextWindowAt) : out.nextWindowAt };
  const waitingForRoom = busy || out.refused === 'concurrency' || (out.nextDueAt !== null && out.nextDueAt <= out.at);
  return { status: 'running', pausedReason: null, nextWindowAt: null, wakeAt: waitingForRoom ? poll : Math.max(out.at, out.nextDueAt ?? poll) };
}

const active = (s: BatchStatus) => s !== 'canceled' && s !== 'completed';

export function voiceBatchMachineOf<Spec extends BatchSpec = BatchSpec>() {
  type Ctx = VoiceBatchContext<Spec>;
  const creditPaused = (c: { status: BatchStatus; pausedReason: PausedReason | null }) => c.status === 'paused' && c.pausedReason === 'insufficient_credit';
  return setup({
    types: { context: {} as Ctx, events: {} as VoiceBatchEvent, input: {} as VoiceBatchInput<Spec>, emitted: {} as ControlReply },
    actors: {
      tick: fromPromise<TickOutput, TickInput<Spec>>(async () => {
        throw new Error('voice batch: tick not provided');
      }),
      notify: fromPromise<void, NoticeInput<Spec>>(async () => {
        throw new Error('voice batch: notify not provided');
      }),
    },
    actions: {
      /** A notification: a spawned once-only effect whose step and id are its number in the batch. */
      notice: enqueueActions(({ context, enqueue }, params: { event: NoticeInput['event']; reason?: PausedReason }) => {
        const fields = { batch_id: context.batchId, ...(params.reason ? { reason: params.reason } : {}) };
        enqueue.spawnChild('notify', {
          id: `notice-${context.notices}`,
          input: { step: `notify:${context.notices}`, event: params.event, spec: context.spec, fields },
        });
        enqueue.assign({ notices: context.notices + 1 });
      }),
      reply: emit(({ context }, params: { ok: boolean; status?: BatchStatus }) => ({
        type: 'control' as const,
        ok: params.ok,
        status: params.status ?? context.status,
      })),
      at: assign(({ context, event }) => ({ now: 'now' in event ? Math.max(context.now, event.now) : context.now })),
      /** What a tick found, and the status, pause and wake-up `decide` makes of it. */
      found: assign(({ context, event }) => {
        const out = (event as unknown as { output: TickOutput }).output;
        return { now: out.at, counts: out.counts, costMicrocents: out.costMicrocents, ...decide(context, out) };
      }),
    },
    delays: {
      startDelay: ({ context }) => Math.min(Math.max(0, context.startAt - context.now), context.timing.maxSleepMs),
      wakeDelay: ({ context }) => Math.min(Math.max(0, (context.wakeAt ?? Infinity) - context.now), context.timing.maxSleepMs),
    },
    guards: {
      started: ({ context }) => context.now >= context.startAt,
      pausable: ({ context }) => active(context.status) && context.status !== 'cancelling' && !(context.status === 'paused' && context.pausedReason === 'api'),
      resumable: ({ context }) => context.status === 'paused',
      cancellable: ({ context }) => active(context.status) && context.status !== 'cancelling',
    },
  }).createMachine({
    id: 'voice-batch',
    context: ({ input }) => ({
      ...input,
      now: input.createdAt,
      status: 'scheduled',
      pausedReason: null,
      startedAt: null,
      endedAt: null,
      nextWindowAt: null,
      wakeAt: null,
      costMicrocents: 0,
      notices: 0,
    }),
    initial: 'scheduled',
    on: {
      'api.pause': [
        {
          guard: 'pausable',
          target: '.live.ticking',
          actions: [
            'at',
            assign({ status: 'paused' as const, pausedReason: 'api' as const }),
            { type: 'notice', params: { event: 'batch.paused', reason: 'api' } },
            { type: 'reply', params: { ok: true } },
          ],
        },
        { actions: { type: 'reply', params: { ok: false } } },
      ],
      'api.resume': [
        { guard: 'resumable', target: '.resuming', actions: ['at', { type: 'reply', params: { ok: true, status: 'running' } }] },
        { actions: { type: 'reply', params: { ok: false } } },
      ],
      'api.cancel': [
        {
          guard: 'cancellable',
          target: '.live.ticking',
          actions: ['at', assign({ status: 'cancelling' as const, pausedReason: null }), { type: 'reply', params: { ok: true } }],
        },
        { actions: { type: 'reply', params: { ok: false } } },
      ],
    },
    states: {
      /** Before start_at: a `drain` tick reads the clock (and nothing else moves), then a wait of at most maxSleepMs. */
      scheduled: {
        initial: 'checking',
        states: {
          checking: {
            invoke: {
              src: 'tick',
              input: ({ context }) => ({ batchId: context.batchId, account: context.account, mode: 'drain' as const, spec: context.spec }),
              onDone: {
                target: 'waiting',
                actions: assign(({ context, event }) => ({ now: Math.max(context.now, event.output.at), counts: event.output.counts })),
              },
              onError: 'waiting',
            },
          },
          waiting: {
            always: {
              guard: 'started',
              target: '#voice-batch.live',
              actions: [
                assign(({ context }) => ({ startedAt: context.now, status: 'running' as const })),
                { type: 'notice', params: { event: 'batch.started' } },
              ],
            },
            after: { startDelay: 'checking' },
            on: { 'runtime.resumed': { target: 'checking', actions: 'at' } },
          },
        },
      },
      /** A resume by the API: a batch paused for credit checks the wallet first (its next tick probes); one not started yet waits for its start. */
      resuming: {
        always: [
          { guard: ({ context }) => creditPaused(context), target: 'live.ticking' },
          { guard: ({ context }) => context.startedAt === null, target: 'scheduled', actions: assign({ status: 'scheduled' as const, pausedReason: null }) },
          {
            target: 'live.ticking',
            actions: [assign({ status: 'running' as const, pausedReason: null }), { type: 'notice', params: { event: 'batch.resumed' } }],
          },
        ],
      },
      live: {
        initial: 'ticking',
        states: {
          ticking: {
            invoke: {
              src: 'tick',
              input: ({ context }) => ({
                batchId: context.batchId,
                account: context.account,
                mode: modeOf(context),
                spec: context.spec,
                costMicrocents: context.costMicrocents,
              }),
              onDone: [
                {
                  guard: ({ context, event }) => !active(decide(context, event.output).status),
                  target: '#voice-batch.finishing',
                  actions: ['found', assign(({ context }) => ({ endedAt: context.now }))],
                },
                {
                  // A batch paused for credit that found the wallet able again resumes, said once.
                  guard: ({ context, event }) => creditPaused(context) && !creditPaused(decide(context, event.output)),
                  target: 'sleeping',
                  actions: ['found', { type: 'notice', params: { event: 'batch.resumed' } }],
                },
                {
                  // The wallet could not afford the next call: paused, said once.
                  guard: ({ context, event }) => !creditPaused(context) && creditPaused(decide(context, event.output)),
                  target: 'sleeping',
                  actions: ['found', { type: 'notice', params: { event: 'batch.paused', reason: 'insufficient_credit' } }],
                },
                { target: 'sleeping', actions: 'found' },
              ],
              onError: { target: 'sleeping', actions: assign(({ context }) => ({ wakeAt: context.now + context.timing.pollMs })) },
            },
          },
          sleeping: {
            after: {
              wakeDelay: {
                target: 'ticking',
                actions: assign(({ context }) => ({
                  now: Math.max(context.now, Math.min(context.wakeAt ?? Infinity, context.now + context.timing.maxSleepMs)),
                })),
              },
            },
            on: { nudge: { target: 'ticking', actions: 'at' }, 'runtime.resumed': { target: 'ticking', actions: 'at' } },
          },
        },
      },
      /** Every row has its outcome: batch.completed (once), then the final state. */
      finishing: {
        invoke: {
          src: 'notify',
          input: ({ context }) => ({
            step: 'notify:completed',
            event: 'batch.completed' as const,
            spec: context.spec,
            fields: { batch_id: context.batchId, status: context.status, counts: context.counts, cost_cents: Math.round(context.costMicrocents) / 1_000_000 },
          }),
          onDone: 'ended',
          onError: 'ended',
        },
      },
      ended: { type: 'final' },
    },
  });
}
