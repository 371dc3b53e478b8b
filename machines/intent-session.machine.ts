// One conversation of one API key (`(key, session_id)`): what the decision engine needs between
// turns. Pure: the service classifies a turn (dialogue act, entities, cascade) and sends the result
// here; the machine resolves a bare yes/no from a pending confirmation, picks the decision (initial
// ask, confirmed or denied path, missing entities, fallbacks), and remembers the pending
// confirmation, the last intent and the entities collected so far.
//
// Inactivity expiry is a deadline in context (`expiresAt`, epoch ms), checked by the next turn: a
// turn after it starts from an empty session. No timer runs, so every state is tagged 'idle' and
// the runtime holds no lease between turns (nothing is lost on restart or eviction).
import { assign, setup } from 'xstate';

export const version = 1;

export interface Decision {
  action: string;
  next_state: string;
  response_id: string;
}

export interface SessionCandidate {
  id: string;
  score: number;
  source: string;
}

export interface TurnClassification {
  classification: 'KNOWN' | 'AMBIGUOUS' | 'UNKNOWN' | 'OUT_OF_SCOPE';
  intent: { id: string; confidence: number; band: string } | null;
  candidates: SessionCandidate[];
  classifier_used: string;
}

export interface IntentDecisions {
  confirm: boolean;
  initial: Decision;
  confirmed?: Decision;
  denied?: Decision;
  required?: string[];
  missing?: Decision;
}

export interface Fallbacks {
  unknown: Decision;
  ambiguous: Decision;
  out_of_scope: Decision;
  greeting?: Decision;
  thanks?: Decision;
  goodbye?: Decision;
  stray_yes_no?: Decision;
}

export type Entities = Partial<Record<'amount' | 'phone' | 'email' | 'date', string | number>>;

export interface TurnEvent {
  type: 'turn';
  /** Epoch ms of the turn. */
  now: number;
  /** Inactivity after which the session is forgotten. */
  idleMs: number;
  requestId: string;
  act: string;
  /** A bare confirmation or denial ("haan ji", "nahi"), else null. */
  yesNo: 'yes' | 'no' | null;
  entities: Entities;
  result: TurnClassification;
  /** The pack's decisions for result.intent (null when not KNOWN). */
  decisions: IntentDecisions | null;
  fallback: Fallbacks;
}

export type IntentSessionEvent = TurnEvent | { type: 'runtime.resumed'; now: number };

export interface PendingConfirmation {
  intent: string;
  confirmed: Decision;
  denied: Decision;
  askedAt: number;
}

export interface TurnOutcome extends TurnClassification {
  requestId: string;
  dialogue_act: string;
  entities: Entities;
  decision: Decision;
}

export interface IntentSessionContext {
  pending: PendingConfirmation | null;
  lastIntent: string | null;
  /** Entities collected over the session (the latest value of each). */
  entities: Entities;
  turns: number;
  expiresAt: number | null;
  /** How many times the session expired and started over. */
  expirations: number;
  lastTurn: TurnOutcome | null;
}

function applyTurn(context: IntentSessionContext, e: TurnEvent): IntentSessionContext {
  let ctx = context;
  if (ctx.expiresAt !== null && e.now > ctx.expiresAt) {
    ctx = { ...ctx, pending: null, lastIntent: null, entities: {}, expirations: ctx.expirations + 1 };
  }
  const entities: Entities = { ...ctx.entities, ...e.entities };
  const common = { requestId: e.requestId, dialogue_act: e.act, entities: e.entities };
  const touched = { turns: ctx.turns + 1, expiresAt: e.now + e.idleMs, entities };

  // A bare yes/no answering a pending confirmation: resolved from context, not classified.
  if (ctx.pending && e.yesNo) {
    const p = ctx.pending;
    const outcome: TurnOutcome = {
      ...common,
      classification: 'KNOWN',
      intent: { id: p.intent, confidence: 1, band: 'HIGH' },
      candidates: [{ id: p.intent, score: 1, source: 'context' }],
      classifier_used: 'context',
      decision: e.yesNo === 'yes' ? p.confirmed : p.denied,
    };
    return { ...ctx, ...touched, pending: null, lastIntent: p.intent, lastTurn: outcome };
  }

  const r = e.result;
  let decision: Decision;
  let pending: PendingConfirmation | null = null;
  let lastIntent = ctx.lastIntent;
  if (r.classification === 'KNOWN' && r.intent && e.decisions) {
    const d = e.decisions;
    lastIntent = r.intent.id;
    const missing = (d.required ?? []).filter((name) => entities[name as keyof Entities] === undefined);
    if (missing.length > 0 && d.missing) decision = d.missing;
    else if (d.confirm && d.confirmed && d.denied) {
      decision = d.initial;
      pending = { intent: r.intent.id, confirmed: d.confirmed, denied: d.denied, askedAt: e.now };
    } else decision = d.initial;
  } else if (e.yesNo) {
    decision = e.fallback.stray_yes_no ?? e.fallback.unknown;
  } else if (e.act === 'GREETING' && e.fallback.greeting) decision = e.fallback.greeting;
  else if (e.act === 'THANKS' && e.fallback.thanks) decision = e.fallback.thanks;
  else if (e.act === 'GOODBYE' && e.fallback.goodbye) decision = e.fallback.goodbye;
  else if (r.classification === 'OUT_OF_SCOPE') decision = e.fallback.out_of_scope;
  else if (r.classification === 'AMBIGUOUS') decision = e.fallback.ambiguous;
  else decision = e.fallback.unknown;
  return { ...ctx, ...touched, pending, lastIntent, lastTurn: { ...common, ...r, decision } };
}

export const intentSessionMachine = setup({
  types: {
    context: {} as IntentSessionContext,
    events: {} as IntentSessionEvent,
  },
  guards: {
    awaiting: ({ context }) => context.pending !== null,
    notAwaiting: ({ context }) => context.pending === null,
  },
}).createMachine({
  id: 'intentSession',
  context: () => ({ pending: null, lastIntent: null, entities: {}, turns: 0, expiresAt: null, expirations: 0, lastTurn: null }),
  initial: 'listening',
  on: {
    turn: { actions: assign(({ context, event }) => applyTurn(context, event as TurnEvent)) },
    // No timers to re-arm: expiry is checked against the deadline in context by the next turn.
    'runtime.resumed': {},
  },
  states: {
    listening: {
      tags: ['idle'],
      always: { guard: 'awaiting', target: 'awaiting_confirmation' },
    },
    awaiting_confirmation: {
      tags: ['idle'],
      always: { guard: 'notAwaiting', target: 'listening' },
    },
  },
});
