// The realtime-session actor kind: the machine (machines/realtime-session.machine.ts) with its
// effects bound to the Meter and to the socket's in-memory resources. Once-only steps, keyed by
// session and tick number, so a replay after kill -9 or a takeover charges nothing twice:
//   settle:<n>   tick n's hold settled for its seconds (or released when the session had no audio)
//   hold:<n+1>   the next tick's hold
// Each step resumes the session's metered call (`Meter.resume`) on the tick's hold: once a tick,
// never per frame.
// Checkpointed (never per frame): written when the state moves (rolling, closing, closed), on the
// durable events (a close of any kind), and otherwise at most every `checkpointMs`. `onOrphan:
// 'finalize'`: an instance that finds a session whose owner died closes it and bills the audio its
// last checkpoint recorded.
import { fromPromise } from 'xstate';
import type { ActorKind, ActorKindContext, ActorResources } from '../actors/kinds.ts';
import type { Hold, Payer } from '../billing/types.ts';
import type { Meter } from '../metering/meter.ts';
import type { Pricing } from '../models/types.ts';
import { priceOfSeconds } from '../billing/pricing.ts';
import {
  realtimeSessionMachineOf,
  version,
  type EffectInput,
  type EndReason,
  type FinalizeInput,
  type RealtimeSessionContext,
  type RollInput,
  type RollOutput,
  type SessionError,
} from '../../machines/realtime-session.machine.ts';

export const REALTIME_KIND = 'realtime-session';

/** What a session carries for its effects (the machine's `spec`): fixed at connect. */
export interface SessionSpec {
  payer: Payer;
  pricing: Pricing;
  startedAt: number;
}

/** The socket side of a session, as the actor's effects see it (src/realtime/session.ts). */
export interface SessionResources extends ActorResources {
  /** The actor decided the session ends (a wallet that ran dry, billing failing). */
  ending(reason: EndReason, error: SessionError | null): void;
  /** The session is closed and billed. */
  closed(chargedSeconds: number): void;
}

export interface RealtimeKindDeps {
  meter: Pick<Meter, 'resume'>;
  now(): number;
  /** How often at most the session is written between state changes (the crash window's half). */
  checkpointMs: number;
  /** Hold life of a tick: longer than a tick can last (`tickMaxAgeMs`), so none expires under a session. */
  holdTtlMs: number;
  retainMs: number;
}

/** The session's machine, its `spec` typed as `SessionSpec` and its holds as the Meter's (the effects read them, the service writes them). */
const realtimeSessionMachine = realtimeSessionMachineOf<SessionSpec, Hold>();

export type RealtimeKind = ActorKind<typeof realtimeSessionMachine, SessionResources>;

/** The price of one tick: what each tick's hold reserves. */
export function tickEstimate(pricing: Pricing, tickSeconds: number): number {
  return Math.ceil(priceOfSeconds(pricing, tickSeconds));
}

export function realtimeSessionKind(deps: RealtimeKindDeps): RealtimeKind {
  return {
    kind: REALTIME_KIND,
    machine: realtimeSessionMachine,
    version,
    persistence: { mode: 'checkpoint', intervalMs: deps.checkpointMs, durableEvents: ['client.closed', 'session.ending', 'upstream.failed'] },
    onOrphan: 'finalize',
    retainFinishedMs: deps.retainMs,
    project: ({ value, context }) => {
      const c = context as RealtimeSessionContext;
      return { account: c.account, model: c.model, status: typeof value === 'string' ? value : Object.keys(value)[0]! };
    },
    indexes: [{ account: 1, created_at: -1 }],
    provide: (ctx) => effects(deps, ctx),
  };
}

function effects(deps: RealtimeKindDeps, ctx: ActorKindContext<SessionResources>) {
  /** The session's metered call on one tick's hold. */
  const callOn = (input: EffectInput<SessionSpec>, hold: Hold) => {
    const { spec } = input;
    return deps.meter.resume({ payer: spec.payer, model: input.model, modelType: 'stt', hold, requestId: input.requestId, startedAt: spec.startedAt });
  };

  /** Tick `tick`'s charge: its hold settled for `seconds`, or released for none. Once per tick. */
  const settle = (input: EffectInput<SessionSpec>, tick: number, hold: Hold, seconds: number) =>
    ctx.steps.once(`settle:${tick}`, async () => {
      const call = callOn(input, hold);
      if (seconds > 0) await call.settle({ route: null, seconds, costMicrocents: priceOfSeconds(input.spec.pricing, seconds), status: 'ok' });
      else await call.release('ok', { seconds });
      return seconds;
    });

  return {
    actors: {
      rollTick: fromPromise<RollOutput<Hold>, RollInput<SessionSpec, Hold>>(async ({ input }) => {
        const { spec } = input;
        await settle(input, input.tick, input.hold, input.seconds);
        try {
          const hold = await ctx.steps.once(`hold:${input.tick + 1}`, async () => {
            const next = await callOn(input, input.hold).holdNext(tickEstimate(spec.pricing, input.tickSeconds), {
              holdRequestId: `${input.requestId}:${input.tick + 1}`,
              ttlMs: deps.holdTtlMs,
            });
            return next.hold;
          });
          return { hold, at: deps.now() };
        } catch (err) {
          const code = (err as { code?: unknown }).code;
          // The key's spend window full (a CPD or CPM cap) ends the session as an empty wallet does.
          if (code === 'rate_limit_exceeded') return { hold: null, at: deps.now(), error: { code, message: (err as Error).message } };
          if (code !== 'insufficient_credit') throw err;
          return {
            hold: null,
            at: deps.now(),
            error: { code: 'insufficient_credit', message: 'The wallet cannot cover the next minute of audio; top up to continue.' },
          };
        }
      }),
      finalize: fromPromise<{ at: number; seconds: number }, FinalizeInput<SessionSpec, Hold>>(async ({ input }) => {
        if (input.hold === null) return { at: deps.now(), seconds: 0 };
        const seconds = await settle(input, input.tick, input.hold, input.seconds);
        return { at: deps.now(), seconds };
      }),
    },
    actions: {
      announceEnding: ({ context }: { context: RealtimeSessionContext }) => {
        const ending = context.ending;
        if (ending) ctx.resources()?.ending(ending.reason, ending.error);
      },
      announceClosed: ({ context }: { context: RealtimeSessionContext }) => {
        ctx.resources()?.closed(context.chargedSeconds ?? 0);
      },
    },
  };
}
