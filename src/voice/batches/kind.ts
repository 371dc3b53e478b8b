// The voice-batch actor kind: the machine (machines/voice-batch.machine.ts) with its two effects,
// the tick (src/voice/batches/pacing.ts) and the batch's events (batch.started, batch.paused,
// batch.resumed, batch.completed: each a once-only step keyed by its number in the batch, so a
// replay never notifies twice). Written after every event (`every-event`): a batch changes a few
// times a second at most, and its controls must not be lost. `onOrphan` is `resume`: a batch has no
// live side of its own (its calls are their own actors), so a restored batch just ticks again and
// adopts what its last run left. The rows are deleted with the actor when its retention ends.
import { fromPromise } from 'xstate';
import type { ActorKind } from '../../actors/kinds.ts';
import type { EventSink } from '../../shared/events.ts';
import {
  voiceBatchMachineOf,
  version,
  type NoticeInput,
  type TickInput,
  type TickOutput,
  type VoiceBatchContext,
} from '../../../machines/voice-batch.machine.ts';
import { orderKey } from '../kind.ts';
import { tick, type BatchSpecFields, type PacingDeps } from './pacing.ts';

export const BATCH_KIND = 'voice-batch';

const voiceBatchMachine = voiceBatchMachineOf<BatchSpecFields>();
export type BatchKind = ActorKind<typeof voiceBatchMachine>;
export type BatchContext = VoiceBatchContext<BatchSpecFields>;

export interface BatchKindDeps extends PacingDeps {
  events: EventSink;
  retainMs: number;
}

export function voiceBatchKind(deps: BatchKindDeps): BatchKind {
  return {
    kind: BATCH_KIND,
    machine: voiceBatchMachine,
    version,
    persistence: { mode: 'every-event' },
    onOrphan: 'resume',
    retainFinishedMs: deps.retainMs,
    onRetired: (id) => deps.rows.remove(id),
    project: ({ context }) => {
      const c = context as BatchContext;
      return { account: c.account, status: c.status, order: orderKey(c.createdAt, c.batchId) };
    },
    indexes: [{ account: 1, order: -1 }],
    provide: (ctx) => ({
      actors: {
        tick: fromPromise<TickOutput, TickInput<BatchSpecFields>>(({ input }) => tick(deps, input)),
        notify: fromPromise<void, NoticeInput<BatchSpecFields>>(async ({ input }) => {
          await ctx.steps.once(input.step, async () => {
            await deps.events.emit({ event: input.event, owner: input.spec.owner, fields: input.fields });
            return true;
          });
        }),
      },
    }),
  };
}
