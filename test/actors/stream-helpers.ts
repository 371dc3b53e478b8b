// The stream kind (test/actors/stream.machine.ts) on runtimes over one real embedded store.
import type { TestContext } from 'node:test';
import { fromPromise } from 'xstate';
import type { ActorKind, ActorResources } from '../../src/actors/kinds.ts';
import { ActorRuntime, type ActorRuntimeOptions } from '../../src/actors/runtime.ts';
import type { Store } from '../../src/store/port.ts';
import { openTestStore, silent, tempDir } from './helpers.ts';
import { streamMachine, version } from './stream.machine.ts';

export type StreamKind = ActorKind<typeof streamMachine, ActorResources>;

/** What the injected `charge` does: given the step runner's scope, returns the charge id. */
export type Charge = (input: { id: string; attempt: number }, once: NonNullable<Parameters<NonNullable<StreamKind['provide']>>[0]>) => Promise<string>;

export function streamKind(extra: Partial<StreamKind> = {}, charge?: Charge): StreamKind {
  return {
    kind: 'stream',
    machine: streamMachine,
    version,
    provide: (ctx) => ({
      actors: {
        charge: fromPromise<string, { id: string; attempt: number }>(({ input }) => (charge ? charge(input, ctx) : Promise.resolve(`charge-${input.attempt}`))),
      },
    }),
    ...extra,
  };
}

export async function streamFixture(t: TestContext) {
  const { dir, remove } = tempDir();
  const store = await openTestStore(dir);
  const runtimes: ActorRuntime[] = [];
  t.after(async () => {
    for (const rt of runtimes) await rt.stop();
    await store.close();
    remove();
  });
  return {
    store,
    async runtime(opts: Partial<ActorRuntimeOptions> = {}, kind: StreamKind = streamKind(), on: Store = store): Promise<ActorRuntime> {
      const rt = new ActorRuntime({ store: on, logger: silent, instanceId: 'node-1', ...opts });
      rt.register(kind);
      runtimes.push(rt);
      await rt.start();
      return rt;
    },
  };
}
