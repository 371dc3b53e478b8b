// A small machine that exercises everything the actor runtime must survive: an invoked promise
// (`work`, injected by the runtime's `provide`, idempotent by actor id + attempt), a deadline kept
// in context as epoch ms (re-armed on `runtime.resumed`, since restoring loses `after` timers),
// an 'idle'-tagged state (non-custodial) and final states. Pure: no I/O, no clock reads.
import { assign, fromPromise, setup } from 'xstate';

export const version = 2;

export interface ProbeInput {
  actorId: string;
}

export interface ProbeContext {
  actorId: string;
  /** Incremented on every `start`; with actorId, the idempotency key of the work. */
  attempt: number;
  /** Epoch ms after which `working` gives up; null while idle. */
  deadline: number | null;
  /** The time given by the event that last armed the deadline timer (`start` or `runtime.resumed`). */
  armedAt: number | null;
  /** Sequence numbers of `note` events, in the order they were processed. */
  notes: number[];
  result: string | null;
}

export interface WorkInput {
  actorId: string;
  attempt: number;
}

export type ProbeEvent = { type: 'start'; now: number; timeoutMs: number } | { type: 'note'; seq: number } | { type: 'runtime.resumed'; now: number };

export const probeMachine = setup({
  types: {
    context: {} as ProbeContext,
    events: {} as ProbeEvent,
    input: {} as ProbeInput,
  },
  actors: {
    // Placeholder: the runtime injects the real one with machine.provide.
    work: fromPromise<string, WorkInput>(async () => {
      throw new Error('probe: work not provided');
    }),
  },
  delays: {
    untilDeadline: ({ context }) => Math.max(0, (context.deadline ?? 0) - (context.armedAt ?? 0)),
  },
}).createMachine({
  id: 'probe',
  output: ({ context }) => ({ result: context.result }),
  context: ({ input }) => ({
    actorId: input.actorId,
    attempt: 0,
    deadline: null,
    armedAt: null,
    notes: [],
    result: null,
  }),
  initial: 'idle',
  on: {
    note: { actions: assign({ notes: ({ context, event }) => [...context.notes, event.seq] }) },
  },
  states: {
    idle: {
      tags: ['idle'],
      on: {
        start: {
          target: 'working',
          actions: assign({
            attempt: ({ context }) => context.attempt + 1,
            deadline: ({ event }) => event.now + event.timeoutMs,
            armedAt: ({ event }) => event.now,
          }),
        },
      },
    },
    working: {
      invoke: {
        id: 'work',
        src: 'work',
        input: ({ context }) => ({ actorId: context.actorId, attempt: context.attempt }),
        onDone: { target: 'done', actions: assign({ result: ({ event }) => event.output }) },
        onError: { target: 'failed' },
      },
      initial: 'waiting',
      states: {
        waiting: {
          after: { untilDeadline: { target: '#probe.timedOut' } },
          on: {
            // Re-enter only this child state: the timer is re-armed, the invoked work keeps running.
            'runtime.resumed': {
              target: 'waiting',
              reenter: true,
              actions: assign({ armedAt: ({ event }) => event.now }),
            },
          },
        },
      },
    },
    done: { type: 'final' },
    timedOut: { type: 'final' },
    failed: { type: 'final' },
  },
});
