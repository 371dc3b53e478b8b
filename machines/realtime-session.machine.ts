// One realtime transcription socket as an actor (WS /v1/audio/transcriptions/stream). Pure: every
// effect is invoked or acted by name and injected by the runtime (src/realtime/kind.ts); no I/O, no
// clock (times come in events and effect outputs).
//
// Audio frames never reach this machine: the socket's in-memory resources (src/realtime/session.ts)
// decode, detect speech and recognise. The machine gets control events only, and is written by the
// checkpoint policy, never once per frame:
// - `audio.progress` (the checkpoint): how much audio the socket has received, in ms. What a crash
//   leaves unbilled is what arrived after the last one written.
// - `speech.started`, `utterance.committed`, `transcript.final`: counters for operators.
// - `client.closed`, `session.ending` (the server ends it: shutdown, idle, limits), `upstream.failed`:
//   the session goes to `closing`.
// - `runtime.resumed` with `mode: 'finalize'`: the instance that held the socket died (kill -9); the
//   socket died with it, so the session closes and bills what its last checkpoint recorded.
//
// Billing is in ticks: the socket opened with a hold for one tick (`tickSeconds` of audio). When the
// audio received passes the tick, or the tick's hold grows old (`tickMaxAgeMs`), `rolling` settles
// the tick and holds the next, so a long session never outlives its hold and the credit at risk is
// one tick. A next hold the wallet cannot cover ends the session (`insufficient_credit`). `closing`
// settles the last tick for the rest of the audio, rounded up to a second (or releases it when no
// audio came). Each settle is a once-only step keyed by tick number: a replay charges nothing twice.
import { assign, fromPromise, setup } from 'xstate';

export const version = 1;

export interface RealtimeSessionInput<Spec extends Opaque = Opaque, Held extends Opaque = Opaque> {
  sessionId: string;
  /** The paying wallet (projected for operators' lists). */
  account: string;
  model: string;
  requestId: string;
  createdAt: number;
  /** Audio seconds one tick's hold covers, and the oldest a tick's hold may grow (ms). */
  tickSeconds: number;
  tickMaxAgeMs: number;
  /** The first tick's hold, held at connect (opaque: the kind reads it). */
  hold: Held;
  /** What the effects need and the machine never reads (payer, pricing): plain JSON. */
  spec: Spec;
}

/**
 * Plain JSON the machine carries and never reads: the session's `spec` and its ticks' holds. Their
 * fields are the kind's to name (src/realtime/kind.ts builds `realtimeSessionMachineOf<its spec,
 * the Meter's hold>()`), so the effects read them typed.
 */
export type Opaque = object;

export type EndReason =
  | 'client_closed'
  | 'client_vanished'
  | 'shutdown'
  | 'idle'
  | 'limit'
  | 'unauthorized'
  | 'upstream_failed'
  | 'insufficient_credit'
  | 'orphaned'
  | 'error';

export interface SessionError {
  code: string;
  message: string;
}

export interface RealtimeSessionContext<Spec extends Opaque = Opaque, Held extends Opaque = Opaque> extends Omit<RealtimeSessionInput<Spec, Held>, 'hold'> {
  /** The current tick's hold; null once the wallet could not cover the next one. */
  hold: Held | null;
  /** Audio received, ms (the last checkpoint's as stored). */
  audioMs: number;
  /** The current tick, its hold (null once the wallet could not cover one) and when it began (epoch ms). */
  tick: number;
  tickStartedAt: number;
  /** Seconds settled in the ticks before the current one. */
  billedSeconds: number;
  utterances: number;
  transcripts: number;
  /** Set once the session is to end; it ends after a tick roll in flight. */
  ending: { reason: EndReason; error: SessionError | null } | null;
  /** Seconds charged in all, once closed. */
  chargedSeconds: number | null;
  closedAt: number | null;
}

/** What every effect is given: the session's fixed facts. */
export interface EffectInput<Spec extends Opaque = Opaque> {
  sessionId: string;
  model: string;
  requestId: string;
  tickSeconds: number;
  spec: Spec;
}

export interface RollInput<Spec extends Opaque = Opaque, Held extends Opaque = Opaque> extends EffectInput<Spec> {
  tick: number;
  hold: Held;
  /** Seconds the tick's hold is settled for. */
  seconds: number;
}

/** `hold` null: the wallet could not cover the next tick (`error` says why). */
export interface RollOutput<Held extends Opaque = Opaque> {
  hold: Held | null;
  at: number;
  error?: SessionError;
}

export interface FinalizeInput<Spec extends Opaque = Opaque, Held extends Opaque = Opaque> extends EffectInput<Spec> {
  tick: number;
  hold: Held | null;
  seconds: number;
  reason: EndReason;
}

export type RealtimeSessionEvent =
  | { type: 'audio.progress'; audioMs: number; now: number }
  | { type: 'speech.started'; itemId: string }
  | { type: 'utterance.committed'; itemId: string }
  | { type: 'transcript.final'; itemId: string }
  | { type: 'upstream.failed'; audioMs: number; error: SessionError }
  | { type: 'client.closed'; audioMs: number; vanished: boolean }
  | { type: 'session.ending'; audioMs: number; reason: EndReason; error?: SessionError }
  | { type: 'runtime.resumed'; now: number; mode: 'resume' | 'finalize' };

/** Whole seconds of audio received that no settled tick covered yet. */
export function unbilledSeconds(context: Pick<RealtimeSessionContext, 'audioMs' | 'billedSeconds'>): number {
  return Math.max(0, Math.ceil(context.audioMs / 1000 - 1e-9) - context.billedSeconds);
}

const fixed = <Spec extends Opaque>(c: RealtimeSessionContext<Spec, Opaque>): EffectInput<Spec> => ({
  sessionId: c.sessionId,
  model: c.model,
  requestId: c.requestId,
  tickSeconds: c.tickSeconds,
  spec: c.spec,
});

const audioOf = (context: RealtimeSessionContext, event: RealtimeSessionEvent): number =>
  'audioMs' in event && typeof event.audioMs === 'number' ? Math.max(context.audioMs, event.audioMs) : context.audioMs;

/** The machine, its `spec` typed as `Spec` and its holds as `Held` (the kind's; the machine never reads them). */
export function realtimeSessionMachineOf<Spec extends Opaque = Opaque, Held extends Opaque = Opaque>() {
  return setup({
    types: {
      context: {} as RealtimeSessionContext<Spec, Held>,
      events: {} as RealtimeSessionEvent,
      input: {} as RealtimeSessionInput<Spec, Held>,
    },
    actors: {
      rollTick: fromPromise<RollOutput<Held>, RollInput<Spec, Held>>(async () => {
        throw new Error('realtime session: rollTick not provided');
      }),
      finalize: fromPromise<{ at: number; seconds: number }, FinalizeInput<Spec, Held>>(async () => {
        throw new Error('realtime session: finalize not provided');
      }),
    },
    actions: {
      /** Tells the socket (when this instance holds it) that the session is ending, and why. */
      announceEnding: () => {},
      /** Tells the socket the session is closed and billed. */
      announceClosed: () => {},
    },
    guards: {
      ending: ({ context }) => context.ending !== null,
      tickDue: ({ context }) => context.hold !== null && context.audioMs - context.billedSeconds * 1000 >= context.tickSeconds * 1000,
    },
  }).createMachine({
    id: 'realtime-session',
    context: ({ input }) => ({
      ...input,
      audioMs: 0,
      tick: 0,
      tickStartedAt: input.createdAt,
      billedSeconds: 0,
      utterances: 0,
      transcripts: 0,
      ending: null,
      chargedSeconds: null,
      closedAt: null,
    }),
    initial: 'open',
    states: {
      open: {
        initial: 'streaming',
        on: {
          'speech.started': {},
          'utterance.committed': { actions: assign({ utterances: ({ context }) => context.utterances + 1 }) },
          'transcript.final': { actions: assign({ transcripts: ({ context }) => context.transcripts + 1 }) },
          'upstream.failed': {
            guard: ({ context }) => context.ending === null,
            actions: assign(({ context, event }) => ({ audioMs: audioOf(context, event), ending: { reason: 'upstream_failed' as const, error: event.error } })),
          },
          'client.closed': {
            guard: ({ context }) => context.ending === null,
            actions: assign(({ context, event }) => ({
              audioMs: audioOf(context, event),
              ending: { reason: event.vanished ? ('client_vanished' as const) : ('client_closed' as const), error: null },
            })),
          },
          'session.ending': {
            guard: ({ context }) => context.ending === null,
            actions: assign(({ context, event }) => ({ audioMs: audioOf(context, event), ending: { reason: event.reason, error: event.error ?? null } })),
          },
          'runtime.resumed': {
            // The socket died with its instance: close with what the last checkpoint recorded. A
            // plain resume (this instance still holds the socket) carries on.
            guard: ({ context, event }) => event.mode === 'finalize' && context.ending === null,
            actions: assign({ ending: { reason: 'orphaned' as const, error: null } }),
          },
        },
        states: {
          streaming: {
            always: [
              { guard: 'ending', target: '#realtime-session.closing' },
              { guard: 'tickDue', target: 'rolling' },
            ],
            on: {
              'audio.progress': [
                {
                  // The tick's hold is old (a slow trickle of audio): roll it even if not full.
                  guard: ({ context, event }) => context.hold !== null && event.now - context.tickStartedAt >= context.tickMaxAgeMs,
                  target: 'rolling',
                  actions: assign({ audioMs: ({ context, event }) => audioOf(context, event) }),
                },
                { actions: assign({ audioMs: ({ context, event }) => audioOf(context, event) }) },
              ],
            },
          },
          rolling: {
            on: {
              // Audio keeps coming while the tick rolls; the roll settles what it was given.
              'audio.progress': { actions: assign({ audioMs: ({ context, event }) => audioOf(context, event) }) },
            },
            invoke: {
              id: 'rollTick',
              src: 'rollTick',
              input: ({ context }) => ({
                ...fixed(context),
                tick: context.tick,
                hold: context.hold!,
                seconds: Math.min(context.tickSeconds, unbilledSeconds(context)),
              }),
              onDone: {
                target: 'streaming',
                actions: assign(({ context, event }) => {
                  const settled = Math.min(context.tickSeconds, unbilledSeconds(context));
                  const out = event.output;
                  return {
                    billedSeconds: context.billedSeconds + settled,
                    tick: context.tick + 1,
                    tickStartedAt: out.at,
                    hold: out.hold,
                    ending:
                      out.hold === null && context.ending === null ? { reason: 'insufficient_credit' as const, error: out.error ?? null } : context.ending,
                  };
                }),
              },
              // The settle failed (the store down): end; closing settles the tick again (same step).
              onError: {
                target: 'streaming',
                actions: assign(({ context }) => ({
                  ending: context.ending ?? { reason: 'error' as const, error: { code: 'internal_error', message: 'Billing failed; the session ends.' } },
                })),
              },
            },
          },
        },
      },
      closing: {
        entry: 'announceEnding',
        invoke: {
          id: 'finalize',
          src: 'finalize',
          input: ({ context }) => ({
            ...fixed(context),
            tick: context.tick,
            hold: context.hold,
            seconds: context.hold === null ? 0 : Math.min(context.tickSeconds, unbilledSeconds(context)),
            reason: context.ending?.reason ?? 'error',
          }),
          onDone: {
            target: 'closed',
            actions: assign(({ context, event }) => ({ chargedSeconds: context.billedSeconds + event.output.seconds, closedAt: event.output.at })),
          },
          // Billing unreachable: the session still ends; the hold's sweep returns what it held.
          onError: { target: 'closed', actions: assign(({ context }) => ({ chargedSeconds: context.billedSeconds })) },
        },
      },
      closed: { type: 'final', entry: 'announceClosed' },
    },
  });
}

/** The machine with an untyped `spec` and holds (the machine's own tests). */
export const realtimeSessionMachine = realtimeSessionMachineOf();
