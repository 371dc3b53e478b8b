// A machine shaped like the speech actors to come, to exercise the runtime's policies: frequent
// context-only events (`tick`), marked events (`mark`), a state change (`open`, custodial), a
// close that a finalizing resume also takes, an invoked once-only step (`charge`), a reply (`whoami`)
// and a context that can grow past the snapshot limit (`grow`). Pure: effects are injected.
import { assign, emit, fromPromise, setup } from 'xstate';

export const version = 1;

export interface StreamInput {
  id: string;
  account: number;
  /** Start open (custodial from the first write), as a job does. */
  open?: boolean;
}

export interface StreamContext {
  id: string;
  account: number;
  ticks: number;
  seen: number[];
  blob: string;
  /** How the last restore was told to continue. */
  resumedAs: 'resume' | 'finalize' | null;
  charged: string | null;
  attempt: number;
  startOpen: boolean;
}

export type StreamEvent =
  | { type: 'tick' }
  | { type: 'mark'; seq: number }
  | { type: 'open' }
  | { type: 'close' }
  | { type: 'charge' }
  | { type: 'grow'; bytes: number }
  | { type: 'whoami' }
  | { type: 'runtime.resumed'; now: number; mode: 'resume' | 'finalize' };

export type StreamReply = { type: 'reply'; ticks: number; seen: number[] };

export const streamMachine = setup({
  types: {
    context: {} as StreamContext,
    events: {} as StreamEvent,
    input: {} as StreamInput,
    emitted: {} as StreamReply,
  },
  actors: {
    charge: fromPromise<string, { id: string; attempt: number }>(async () => {
      throw new Error('stream: charge not provided');
    }),
  },
  guards: {
    finalizing: ({ event }) => event.type === 'runtime.resumed' && event.mode === 'finalize',
  },
}).createMachine({
  id: 'stream',
  context: ({ input }) => ({
    id: input.id,
    account: input.account,
    ticks: 0,
    seen: [],
    blob: '',
    resumedAs: null,
    charged: null,
    attempt: 0,
    startOpen: input.open === true,
  }),
  initial: 'idle',
  on: {
    tick: { actions: assign({ ticks: ({ context }) => context.ticks + 1 }) },
    mark: { actions: assign({ seen: ({ context, event }) => [...context.seen, event.seq] }) },
    grow: { actions: assign({ blob: ({ event }) => 'x'.repeat(event.bytes) }) },
    whoami: { actions: emit(({ context }) => ({ type: 'reply' as const, ticks: context.ticks, seen: context.seen })) },
    'runtime.resumed': { actions: assign({ resumedAs: ({ event }) => event.mode }) },
  },
  states: {
    idle: {
      tags: ['idle'],
      always: { guard: ({ context }) => context.startOpen && context.ticks === 0 && context.resumedAs === null, target: 'open' },
      on: { open: 'open', charge: { target: 'charging', actions: assign({ attempt: ({ context }) => context.attempt + 1 }) } },
    },
    open: {
      on: {
        close: 'closed',
        'runtime.resumed': [
          { guard: 'finalizing', target: 'closed', actions: assign({ resumedAs: 'finalize' as const }) },
          { actions: assign({ resumedAs: 'resume' as const }) },
        ],
      },
    },
    charging: {
      invoke: {
        id: 'charge',
        src: 'charge',
        input: ({ context }) => ({ id: context.id, attempt: context.attempt }),
        onDone: { target: 'idle', actions: assign({ charged: ({ event }) => event.output }) },
        onError: { target: 'idle' },
      },
    },
    closed: { type: 'final' },
  },
});
