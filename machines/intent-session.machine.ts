// One conversation of one API key (`(key, session_id)`): what the decision engine needs between
// turns. Pure: the service classifies a turn (dialogue act, entities, cascade) and sends the result
// here; the machine resolves a bare yes/no from a pending confirmation, picks the decision (initial
// ask, confirmed or denied path, missing entities, fallbacks), and remembers the pending
// confirmation, the last intent, the entities collected so far, the entities it asked for and the
// intents it offered: a later turn that supplies them ("299" after "how much was the recharge?")
// or picks one ("the second one", "ATM wala" after "did you mean...?") resumes that intent from
// context, as a bare yes/no resumes a pending confirmation.
//
// Inactivity expiry is a deadline in context (`expiresAt`, epoch ms), checked by the next turn: a
// turn after it starts from an empty session. No timer runs, so every state is tagged 'idle' and
// the runtime holds no lease between turns (nothing is lost on restart or eviction).
import { assign, emit, setup } from 'xstate';

/** 2: context.awaiting and context.choices; version 1 snapshots are migrated by src/intent/kind.ts. */
export const version = 2;

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
  /** An out-of-scope turn right after one (the session's previous turn took `out_of_scope`); default `out_of_scope`. */
  out_of_scope_again?: Decision;
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
  /**
   * The number the turn consists of ("299", "299 ka tha", "dedh sau"), else null: read as the
   * amount only when the session asked for one, since out of context a bare number is no amount.
   */
  number?: number | null;
  /** A pick among offered options ("the second one", "pehla wala"): its index, −1 for the last; else null. */
  ordinal?: number | null;
  result: TurnClassification;
  /** With an AMBIGUOUS result: the intents to offer (the close candidates), with their decisions. */
  choices?: Choice[];
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
  /** The turn's own entities (what /v1/understand answers). */
  entities: Entities;
  /** The session's entities after the turn: what an action the decision takes acts on. */
  collected: Entities;
  decision: Decision;
}

/** An intent offered to the caller after an AMBIGUOUS turn. */
export interface Choice {
  id: string;
  decisions: IntentDecisions;
}

/** A required entity the session asked for, and the intent it completes. */
export interface AwaitingEntities {
  intent: string;
  names: string[];
  decisions: IntentDecisions;
}

export interface IntentSessionContext {
  pending: PendingConfirmation | null;
  awaiting: AwaitingEntities | null;
  /** The intents offered by the previous turn (AMBIGUOUS), for this turn only. */
  choices: Choice[] | null;
  lastIntent: string | null;
  /** Entities collected over the session (the latest value of each). */
  entities: Entities;
  turns: number;
  expiresAt: number | null;
  /** How many times the session expired and started over. */
  expirations: number;
  lastTurn: TurnOutcome | null;
}

/** What the pack says for a KNOWN intent given the entities collected: ask for a missing one, ask to confirm, or act. */
function decide(
  intent: string,
  d: IntentDecisions,
  entities: Entities,
  now: number,
): { decision: Decision; pending: PendingConfirmation | null; awaiting: AwaitingEntities | null } {
  const missing = (d.required ?? []).filter((name) => entities[name as keyof Entities] === undefined);
  if (missing.length > 0 && d.missing) return { decision: d.missing, pending: null, awaiting: { intent, names: missing, decisions: d } };
  if (d.confirm && d.confirmed && d.denied)
    return { decision: d.initial, pending: { intent, confirmed: d.confirmed, denied: d.denied, askedAt: now }, awaiting: null };
  return { decision: d.initial, pending: null, awaiting: null };
}

/**
 * The turn's own entities; while the session awaits an amount, a bare number ("299") is that
 * amount, unless the turn is another intent of its own.
 */
function ownEntities(awaiting: AwaitingEntities | null, e: TurnEvent): Entities {
  const own: Entities = { ...e.entities };
  const forAwaited = e.result.classification !== 'KNOWN' || e.result.intent?.id === awaiting?.intent;
  if (awaiting?.names.includes('amount') && forAwaited && own.amount === undefined && typeof e.number === 'number') own.amount = e.number;
  return own;
}

/**
 * What a turn's own candidates must say of an offered intent to pick it ("paise wala"): at least
 * this share of the offered intents' scores, and at least this score (a probability of the local
 * model, or a keyword score of the matcher), so a turn about something else picks nothing.
 */
const PICK_SHARE = 0.7;
const PICK_MIN = { local_model: 0.1, deterministic: 1 };

/**
 * Which offered intent the turn picks: by position ("the second one"), or the offered intent the
 * turn's own candidates clearly prefer among those offered; null when it picks none.
 */
function picked(choices: Choice[], e: TurnEvent): Choice | null {
  if (typeof e.ordinal === 'number') return choices[e.ordinal < 0 ? choices.length - 1 : e.ordinal] ?? null;
  const cands = e.result.candidates;
  const source: keyof typeof PICK_MIN = cands.some((c) => c.source === 'local_model') ? 'local_model' : 'deterministic';
  const score = (id: string) => Math.max(0, ...cands.filter((c) => c.source === source && c.id === id).map((c) => c.score));
  const scores = choices.map((c) => score(c.id));
  const total = scores.reduce((a, b) => a + b, 0);
  const best = scores.indexOf(Math.max(...scores));
  return scores[best]! >= PICK_MIN[source] && scores[best]! / total >= PICK_SHARE ? choices[best]! : null;
}

const sameDecision = (a: Decision, b: Decision) => a.action === b.action && a.next_state === b.next_state && a.response_id === b.response_id;

/**
 * Whether an out-of-scope turn is the second (or a later one) in a row and the pack has a decision
 * for that: the previous turn was out of scope and took an out-of-scope fallback. A pack can so ask
 * back after one (a misheard sentence reads as out of scope) and close only when the caller insists.
 */
function outOfScopeAgain(last: TurnOutcome | null, f: Fallbacks): boolean {
  const again = f.out_of_scope_again;
  if (again === undefined || last?.classification !== 'OUT_OF_SCOPE') return false;
  return sameDecision(last.decision, f.out_of_scope) || sameDecision(last.decision, again);
}

function applyTurn(context: IntentSessionContext, e: TurnEvent): IntentSessionContext {
  let ctx = context;
  if (ctx.expiresAt !== null && e.now > ctx.expiresAt) {
    ctx = { ...ctx, pending: null, awaiting: null, choices: null, lastIntent: null, entities: {}, expirations: ctx.expirations + 1, lastTurn: null };
  }
  const own = ownEntities(ctx.awaiting, e);
  const entities: Entities = { ...ctx.entities, ...own };
  const common = { requestId: e.requestId, dialogue_act: e.act, entities: own, collected: entities };
  const touched = { turns: ctx.turns + 1, expiresAt: e.now + e.idleMs, entities };

  // The turn answers the session's question: the intent that asked, certain, resolved from context.
  const fromContext = (intent: string, decision: Decision): TurnOutcome => ({
    ...common,
    classification: 'KNOWN',
    intent: { id: intent, confidence: 1, band: 'HIGH' },
    candidates: [{ id: intent, score: 1, source: 'context' }],
    classifier_used: 'context',
    decision,
  });

  // A bare yes/no answering a pending confirmation: resolved from context, not classified.
  if (ctx.pending && e.yesNo) {
    const p = ctx.pending;
    const outcome = fromContext(p.intent, e.yesNo === 'yes' ? p.confirmed : p.denied);
    return { ...ctx, ...touched, pending: null, awaiting: null, choices: null, lastIntent: p.intent, lastTurn: outcome };
  }

  const r = e.result;
  // A turn that is no intent of its own but supplies what was asked for resumes the awaited intent.
  const a = ctx.awaiting;
  if (a && r.classification !== 'KNOWN' && !e.yesNo && a.names.some((n) => own[n as keyof Entities] !== undefined)) {
    const next = decide(a.intent, a.decisions, entities, e.now);
    return {
      ...ctx,
      ...touched,
      pending: next.pending,
      awaiting: next.awaiting,
      choices: null,
      lastIntent: a.intent,
      lastTurn: fromContext(a.intent, next.decision),
    };
  }
  // A turn that is no intent of its own but picks one of the intents just offered goes on with it.
  const pick = ctx.choices && r.classification !== 'KNOWN' && !e.yesNo ? picked(ctx.choices, e) : null;
  if (pick) {
    const next = decide(pick.id, pick.decisions, entities, e.now);
    return {
      ...ctx,
      ...touched,
      pending: next.pending,
      awaiting: next.awaiting,
      choices: null,
      lastIntent: pick.id,
      lastTurn: fromContext(pick.id, next.decision),
    };
  }

  let decision: Decision;
  let pending: PendingConfirmation | null = null;
  // Asked-for entities stay awaited through turns that are no intent (a greeting, a question back).
  let awaiting = r.classification === 'KNOWN' ? null : ctx.awaiting;
  let lastIntent = ctx.lastIntent;
  if (r.classification === 'KNOWN' && r.intent && e.decisions) {
    lastIntent = r.intent.id;
    ({ decision, pending, awaiting } = decide(r.intent.id, e.decisions, entities, e.now));
  } else if (e.yesNo) {
    decision = e.fallback.stray_yes_no ?? e.fallback.unknown;
  } else if (e.act === 'GREETING' && e.fallback.greeting) decision = e.fallback.greeting;
  else if (e.act === 'THANKS' && e.fallback.thanks) decision = e.fallback.thanks;
  else if (e.act === 'GOODBYE' && e.fallback.goodbye) decision = e.fallback.goodbye;
  else if (r.classification === 'OUT_OF_SCOPE') decision = outOfScopeAgain(ctx.lastTurn, e.fallback) ? e.fallback.out_of_scope_again! : e.fallback.out_of_scope;
  else if (r.classification === 'AMBIGUOUS') decision = e.fallback.ambiguous;
  else decision = e.fallback.unknown;
  const choices = r.classification === 'AMBIGUOUS' && e.choices && e.choices.length > 1 ? e.choices : null;
  return { ...ctx, ...touched, pending, awaiting, choices, lastIntent, lastTurn: { ...common, ...r, decision } };
}

/** What a turn emits: the runtime hands it to the caller that asked. */
export type TurnOutcomeEvent = { type: 'turn.outcome'; outcome: TurnOutcome };

export const intentSessionMachine = setup({
  types: {
    context: {} as IntentSessionContext,
    events: {} as IntentSessionEvent,
    emitted: {} as TurnOutcomeEvent,
  },
  guards: {
    awaiting: ({ context }) => context.pending !== null,
    notAwaiting: ({ context }) => context.pending === null,
  },
}).createMachine({
  id: 'intentSession',
  context: () => ({ pending: null, awaiting: null, choices: null, lastIntent: null, entities: {}, turns: 0, expiresAt: null, expirations: 0, lastTurn: null }),
  initial: 'listening',
  on: {
    // The outcome is the turn's reply (the runtime's `ask`); it is also kept as `lastTurn`.
    turn: {
      actions: [
        assign(({ context, event }) => applyTurn(context, event as TurnEvent)),
        emit(({ context }) => ({ type: 'turn.outcome' as const, outcome: context.lastTurn! })),
      ],
    },
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
