// The intent-session actor kind: one actor per (API key, session_id), keyed `${keyId}:${session_id}`.
// The machine has no effects to inject; src/composition.ts registers the kind with the runtime.
import type { ActorKind } from '../actors/runtime.ts';
import { intentSessionMachine, version } from '../../machines/intent-session.machine.ts';

export const INTENT_SESSION_KIND = 'intent-session';

export const intentSessionKind: ActorKind<typeof intentSessionMachine> = {
  kind: INTENT_SESSION_KIND,
  machine: intentSessionMachine,
  version,
  // Version 1 sessions knew no asked-for entities and offered no intents.
  migrate: (persisted, from) => {
    const p = persisted as { context?: Record<string, unknown> };
    return from < 2 && p.context ? { ...p, context: { awaiting: null, choices: null, ...p.context } } : persisted;
  },
  // Sessions are small and many: keep them in memory a short while after a turn.
  idleEvictMs: 30_000,
  // A turn is written at once when it moves the session's state (a confirmation asked or
  // answered), else within a second; the reply never waits for the write (the service asks with
  // wait 'applied'). A crash forgets at most that second of conversation, never a charge.
  persistence: { mode: 'checkpoint', intervalMs: 1_000 },
};
