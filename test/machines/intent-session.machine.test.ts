// The intent-session machine: pure transitions (pending confirmation, confirmed and denied paths,
// missing entities, fallbacks, inactivity expiry) and a persistence round trip through the runtime.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createActor, initialTransition, transition } from 'xstate';
import { intentSessionMachine, version, type TurnEvent, type IntentDecisions } from '../../machines/intent-session.machine.ts';
import { ActorRuntime } from '../../src/actors/runtime.ts';
import { intentSessionKind, INTENT_SESSION_KIND } from '../../src/intent/kind.ts';
import { openTestStore, silent, tempDir } from '../actors/helpers.ts';

const D = (action: string, next_state: string, response_id: string) => ({ action, next_state, response_id });
const FALLBACK = {
  unknown: D('ASK', 'CLARIFY', 'GEN.CLARIFY'),
  ambiguous: D('ASK', 'CLARIFY', 'GEN.DISAMBIGUATE'),
  out_of_scope: D('CLOSE', 'OUT_OF_SCOPE', 'GEN.OOS'),
  greeting: D('ASK', 'LISTENING', 'GEN.GREETING'),
};
const DISPUTE: IntentDecisions = {
  confirm: true,
  initial: D('ASK', 'AWAITING_DISPUTE_CONFIRMATION', 'ASK_RAISE'),
  confirmed: D('CREATE_DISPUTE', 'DISPUTE_CREATED', 'CREATED'),
  denied: D('CLOSE', 'NO_DISPUTE', 'NOT_RAISED'),
};
const IDLE_MS = 30 * 60_000;

let seq = 0;
function turn(over: Partial<TurnEvent> = {}): TurnEvent {
  return {
    type: 'turn',
    now: 1_000_000,
    idleMs: IDLE_MS,
    requestId: `r${seq++}`,
    act: 'STATEMENT',
    yesNo: null,
    entities: {},
    result: { classification: 'UNKNOWN', intent: null, candidates: [], classifier_used: 'local_model' },
    decisions: null,
    fallback: FALLBACK,
    ...over,
  };
}
const complaint = (over: Partial<TurnEvent> = {}) =>
  turn({
    act: 'COMPLAINT',
    result: {
      classification: 'KNOWN',
      intent: { id: 'BANKING.ATM.CASH_NOT_DISPENSED', confidence: 0.95, band: 'HIGH' },
      candidates: [],
      classifier_used: 'deterministic',
    },
    decisions: DISPUTE,
    ...over,
  });
const yes = (over: Partial<TurnEvent> = {}) => turn({ act: 'CONFIRMATION', yesNo: 'yes', ...over });
const no = (over: Partial<TurnEvent> = {}) => turn({ act: 'DENIAL', yesNo: 'no', ...over });

describe('intent-session machine (pure)', () => {
  it('an intent that needs confirmation asks first, then a bare yes takes the confirmed path from context', () => {
    const [s0] = initialTransition(intentSessionMachine);
    assert.equal(s0.value, 'listening');
    assert.equal(s0.hasTag('idle'), true);
    const [s1] = transition(intentSessionMachine, s0, complaint());
    assert.equal(s1.value, 'awaiting_confirmation');
    assert.equal(s1.hasTag('idle'), true, 'no lease between turns');
    assert.equal(s1.context.lastTurn?.decision.action, 'ASK');
    assert.equal(s1.context.pending?.intent, 'BANKING.ATM.CASH_NOT_DISPENSED');
    const [s2] = transition(intentSessionMachine, s1, yes({ now: 1_000_500 }));
    assert.equal(s2.value, 'listening');
    assert.equal(s2.context.lastTurn?.decision.action, 'CREATE_DISPUTE');
    assert.equal(s2.context.lastTurn?.classifier_used, 'context');
    assert.deepEqual(s2.context.lastTurn?.candidates, [{ id: 'BANKING.ATM.CASH_NOT_DISPENSED', score: 1, source: 'context' }]);
    assert.equal(s2.context.pending, null);
    assert.equal(s2.context.lastIntent, 'BANKING.ATM.CASH_NOT_DISPENSED');
  });

  it('a denial takes the denied path; a yes with nothing pending is a stray answer', () => {
    const [s0] = initialTransition(intentSessionMachine);
    const [s1] = transition(intentSessionMachine, s0, complaint());
    const [s2] = transition(intentSessionMachine, s1, no());
    assert.equal(s2.context.lastTurn?.decision.action, 'CLOSE');
    const [s3] = transition(intentSessionMachine, s2, yes());
    assert.equal(s3.context.lastTurn?.classifier_used, 'local_model');
    assert.equal(s3.context.lastTurn?.decision.response_id, 'GEN.CLARIFY');
  });

  it('any other turn replaces the pending confirmation', () => {
    const [s0] = initialTransition(intentSessionMachine);
    const [s1] = transition(intentSessionMachine, s0, complaint());
    const [s2] = transition(intentSessionMachine, s1, turn({ act: 'GREETING' }));
    assert.equal(s2.context.pending, null);
    assert.equal(s2.context.lastTurn?.decision.response_id, 'GEN.GREETING');
    const [s3] = transition(intentSessionMachine, s2, yes());
    assert.notEqual(s3.context.lastTurn?.decision.action, 'CREATE_DISPUTE');
  });

  it('forgets everything after the inactivity deadline', () => {
    const [s0] = initialTransition(intentSessionMachine);
    const [s1] = transition(intentSessionMachine, s0, complaint({ entities: { amount: 500 } }));
    assert.equal(s1.context.expiresAt, 1_000_000 + IDLE_MS);
    const [late] = transition(intentSessionMachine, s1, yes({ now: 1_000_000 + IDLE_MS + 1 }));
    assert.notEqual(late.context.lastTurn?.decision.action, 'CREATE_DISPUTE');
    assert.equal(late.context.expirations, 1);
    assert.deepEqual(late.context.entities, {});
    const [inTime] = transition(intentSessionMachine, s1, yes({ now: 1_000_000 + IDLE_MS }));
    assert.equal(inTime.context.lastTurn?.decision.action, 'CREATE_DISPUTE');
  });

  it('collects entities over turns and asks for a required one that is missing', () => {
    const recharge: IntentDecisions = {
      confirm: false,
      initial: D('ESCALATE', 'RECHARGE_ESCALATED', 'ESC'),
      required: ['amount'],
      missing: D('ASK', 'AWAITING_AMOUNT', 'ASK_AMOUNT'),
    };
    const known = {
      classification: 'KNOWN' as const,
      intent: { id: 'TELECOM.RECHARGE.NOT_REFLECTED', confidence: 0.9, band: 'HIGH' },
      candidates: [],
      classifier_used: 'deterministic',
    };
    const [s0] = initialTransition(intentSessionMachine);
    const [s1] = transition(intentSessionMachine, s0, turn({ result: known, decisions: recharge }));
    assert.equal(s1.context.lastTurn?.decision.action, 'ASK');
    const [s2] = transition(intentSessionMachine, s1, turn({ entities: { amount: 299 } }));
    assert.deepEqual(s2.context.entities, { amount: 299 });
    const [s3] = transition(intentSessionMachine, s2, turn({ result: known, decisions: recharge }));
    assert.equal(s3.context.lastTurn?.decision.action, 'ESCALATE');
    assert.deepEqual(s3.context.lastTurn?.entities, {}, "the response lists the turn's own entities");
  });

  const RECHARGE: IntentDecisions = {
    confirm: false,
    initial: D('ESCALATE', 'RECHARGE_ESCALATED', 'ESC'),
    required: ['amount'],
    missing: D('ASK', 'AWAITING_AMOUNT', 'ASK_AMOUNT'),
  };
  const rechargeKnown = {
    classification: 'KNOWN' as const,
    intent: { id: 'TELECOM.RECHARGE.NOT_REFLECTED', confidence: 0.9, band: 'HIGH' },
    candidates: [],
    classifier_used: 'deterministic',
  };
  it('a bare number answering "how much?" resumes the intent that asked, from context', () => {
    const [s0] = initialTransition(intentSessionMachine);
    const [s1] = transition(intentSessionMachine, s0, turn({ result: rechargeKnown, decisions: RECHARGE }));
    assert.equal(s1.context.lastTurn?.decision.next_state, 'AWAITING_AMOUNT');
    assert.deepEqual(s1.context.awaiting?.names, ['amount']);
    // A greeting in between neither answers nor forgets the question.
    const [s2] = transition(intentSessionMachine, s1, turn({ act: 'GREETING', number: null }));
    assert.equal(s2.context.lastTurn?.classification, 'UNKNOWN');
    assert.notEqual(s2.context.awaiting, null);
    const [s3] = transition(intentSessionMachine, s2, turn({ number: 299 }));
    const out = s3.context.lastTurn!;
    assert.equal(out.classification, 'KNOWN');
    assert.equal(out.classifier_used, 'context');
    assert.deepEqual(out.intent, { id: 'TELECOM.RECHARGE.NOT_REFLECTED', confidence: 1, band: 'HIGH' });
    assert.equal(out.decision.action, 'ESCALATE');
    assert.deepEqual(out.entities, { amount: 299 });
    assert.equal(s3.context.awaiting, null);
    assert.deepEqual(s3.context.entities, { amount: 299 });
  });
  it('the number counts when the turn is the awaited intent again, not when it is another intent or nothing was asked', () => {
    const [s0] = initialTransition(intentSessionMachine);
    // Nothing asked: a bare number is no amount.
    const [n1] = transition(intentSessionMachine, s0, turn({ number: 299 }));
    assert.equal(n1.context.lastTurn?.classification, 'UNKNOWN');
    assert.deepEqual(n1.context.entities, {});
    const [s1] = transition(intentSessionMachine, s0, turn({ result: rechargeKnown, decisions: RECHARGE }));
    const [same] = transition(intentSessionMachine, s1, turn({ number: 299, result: rechargeKnown, decisions: RECHARGE }));
    assert.equal(same.context.lastTurn?.decision.action, 'ESCALATE');
    assert.equal(same.context.lastTurn?.classifier_used, 'deterministic');
    // Another complaint with a number in it replaces the question; its number is not the recharge's amount.
    const [other] = transition(intentSessionMachine, s1, complaint({ number: 500 }));
    assert.equal(other.context.lastTurn?.intent?.id, 'BANKING.ATM.CASH_NOT_DISPENSED');
    assert.deepEqual(other.context.entities, {});
    assert.equal(other.context.awaiting, null);
    // A bare yes answers no question here (nothing pending to confirm): the stray fallback, still awaiting.
    const [stray] = transition(intentSessionMachine, s1, yes());
    assert.equal(stray.context.lastTurn?.classifier_used, 'local_model');
    assert.notEqual(stray.context.awaiting, null);
  });
  const CARD: IntentDecisions = { confirm: false, initial: D('INFORM', 'CARD_BLOCKED', 'CARD') };
  const offered = [
    { id: 'BANKING.ATM.WRONG_AMOUNT', decisions: DISPUTE },
    { id: 'BANKING.ATM.CARD_RETAINED', decisions: CARD },
  ];
  const ambiguous = (over: Partial<TurnEvent> = {}) =>
    turn({
      result: {
        classification: 'AMBIGUOUS',
        intent: null,
        candidates: [
          { id: 'BANKING.ATM.WRONG_AMOUNT', score: 0.3, source: 'local_model' },
          { id: 'BANKING.ATM.CARD_RETAINED', score: 0.28, source: 'local_model' },
        ],
        classifier_used: 'local_model',
      },
      choices: offered,
      ...over,
    });
  const unresolved = (candidates: { id: string; score: number; source: string }[], over: Partial<TurnEvent> = {}) =>
    turn({ result: { classification: 'OUT_OF_SCOPE', intent: null, candidates, classifier_used: 'local_model' }, ...over });
  it('after an AMBIGUOUS turn, "the second one" picks the second intent offered, from context, with its own decisions', () => {
    const [s0] = initialTransition(intentSessionMachine);
    const [s1] = transition(intentSessionMachine, s0, ambiguous());
    assert.equal(s1.context.lastTurn?.decision.response_id, 'GEN.DISAMBIGUATE');
    assert.equal(s1.context.choices?.length, 2);
    const [s2] = transition(intentSessionMachine, s1, unresolved([], { ordinal: 1 }));
    assert.equal(s2.context.lastTurn?.classifier_used, 'context');
    assert.deepEqual(s2.context.lastTurn?.intent, { id: 'BANKING.ATM.CARD_RETAINED', confidence: 1, band: 'HIGH' });
    assert.equal(s2.context.lastTurn?.decision.action, 'INFORM');
    assert.equal(s2.context.choices, null);
    // "last" picks the last; the first intent needs a confirmation, which then becomes pending.
    const [l1] = transition(intentSessionMachine, s1, unresolved([], { ordinal: -1 }));
    assert.equal(l1.context.lastTurn?.intent?.id, 'BANKING.ATM.CARD_RETAINED');
    const [f1] = transition(intentSessionMachine, s1, unresolved([], { ordinal: 0 }));
    assert.equal(f1.context.lastTurn?.decision.action, 'ASK');
    assert.equal(f1.value, 'awaiting_confirmation');
    assert.equal(transition(intentSessionMachine, s1, unresolved([], { ordinal: 2 }))[0].context.lastTurn?.classifier_used, 'local_model', 'no third option');
  });
  it('a turn whose own candidates clearly prefer one offered intent picks it; a turn about something else picks none, and the offer lasts one turn', () => {
    const [s0] = initialTransition(intentSessionMachine);
    const [s1] = transition(intentSessionMachine, s0, ambiguous());
    const [money] = transition(
      intentSessionMachine,
      s1,
      unresolved([
        { id: 'BANKING.TXN.DOUBLE_DEBIT', score: 0.14, source: 'local_model' },
        { id: 'BANKING.ATM.WRONG_AMOUNT', score: 0.136, source: 'local_model' },
      ]),
    );
    assert.equal(money.context.lastTurn?.intent?.id, 'BANKING.ATM.WRONG_AMOUNT');
    assert.equal(money.context.lastTurn?.classifier_used, 'context');
    const [split] = transition(
      intentSessionMachine,
      s1,
      unresolved([
        { id: 'BANKING.ATM.WRONG_AMOUNT', score: 0.2, source: 'local_model' },
        { id: 'BANKING.ATM.CARD_RETAINED', score: 0.15, source: 'local_model' },
      ]),
    );
    assert.equal(split.context.lastTurn?.classifier_used, 'local_model', 'no clear preference');
    const [faint] = transition(intentSessionMachine, s1, unresolved([{ id: 'BANKING.ATM.WRONG_AMOUNT', score: 0.007, source: 'local_model' }]));
    assert.equal(faint.context.lastTurn?.classifier_used, 'local_model', 'too faint to be a pick');
    assert.equal(faint.context.choices, null);
    const [late] = transition(intentSessionMachine, faint, unresolved([], { ordinal: 1 }));
    assert.equal(late.context.lastTurn?.classifier_used, 'local_model', 'the offer was for one turn');
    // A turn that is an intent of its own is just that intent.
    const [own] = transition(intentSessionMachine, s1, complaint({ ordinal: 1 }));
    assert.equal(own.context.lastTurn?.intent?.id, 'BANKING.ATM.CASH_NOT_DISPENSED');
  });
  it('out of scope twice in a row: the first asks back, the second (and any after it) takes out_of_scope_again; another turn between starts over', () => {
    const fallback = { ...FALLBACK, out_of_scope: D('ASK', 'CLARIFY', 'GEN.OOS'), out_of_scope_again: D('CLOSE', 'OUT_OF_SCOPE', 'GEN.OOS_CLOSE') };
    const oos = (over: Partial<TurnEvent> = {}) =>
      turn({ fallback, result: { classification: 'OUT_OF_SCOPE', intent: null, candidates: [], classifier_used: 'deterministic' }, ...over });
    const said = (s: { context: { lastTurn: { decision: { action: string; response_id: string } } | null } }) =>
      `${s.context.lastTurn?.decision.action} ${s.context.lastTurn?.decision.response_id}`;
    const [s0] = initialTransition(intentSessionMachine);
    const [s1] = transition(intentSessionMachine, s0, oos());
    assert.equal(said(s1), 'ASK GEN.OOS');
    const [s2] = transition(intentSessionMachine, s1, oos());
    assert.equal(said(s2), 'CLOSE GEN.OOS_CLOSE');
    const [s3] = transition(intentSessionMachine, s2, oos());
    assert.equal(said(s3), 'CLOSE GEN.OOS_CLOSE');
    // An unclassified turn between two out-of-scope ones: the next is a first again.
    const [u] = transition(intentSessionMachine, s1, turn({ fallback }));
    assert.equal(said(u), 'ASK GEN.CLARIFY');
    assert.equal(said(transition(intentSessionMachine, u, oos())[0]), 'ASK GEN.OOS');
    // A greeting that reads as out of scope took the greeting's decision: not an out-of-scope turn.
    const [g] = transition(intentSessionMachine, s0, oos({ act: 'GREETING' }));
    assert.equal(said(transition(intentSessionMachine, g, oos())[0]), 'ASK GEN.OOS');
    // After the session expired, the next out-of-scope turn is a first.
    assert.equal(said(transition(intentSessionMachine, s1, oos({ now: 1_000_000 + IDLE_MS + 1 }))[0]), 'ASK GEN.OOS');
    // A pack without out_of_scope_again takes out_of_scope every time.
    const [p1] = transition(
      intentSessionMachine,
      s0,
      turn({ result: { classification: 'OUT_OF_SCOPE', intent: null, candidates: [], classifier_used: 'deterministic' } }),
    );
    const [p2] = transition(
      intentSessionMachine,
      p1,
      turn({ result: { classification: 'OUT_OF_SCOPE', intent: null, candidates: [], classifier_used: 'deterministic' } }),
    );
    assert.equal(said(p2), 'CLOSE GEN.OOS');
  });
  it('a version 1 session (no asked-for entities) is migrated and goes on', () => {
    const actor = createActor(intentSessionMachine).start();
    actor.send(complaint());
    const v1 = actor.getPersistedSnapshot() as unknown as { context: Record<string, unknown> };
    delete v1.context.awaiting;
    delete v1.context.choices;
    actor.stop();
    const migrated = intentSessionKind.migrate!(v1, 1) as typeof v1;
    assert.equal(migrated.context.awaiting, null);
    assert.equal(migrated.context.choices, null);
    assert.equal(intentSessionKind.migrate!(migrated, 2), migrated);
    const resumed = createActor(intentSessionMachine, { snapshot: migrated as never }).start();
    resumed.send(yes());
    assert.equal(resumed.getSnapshot().context.lastTurn?.decision.action, 'CREATE_DISPUTE');
    resumed.stop();
  });
});

describe('intent-session actors', () => {
  it('persist the pending confirmation across a runtime restart', async (t) => {
    const { dir, remove } = tempDir();
    let store = await openTestStore(dir);
    t.after(remove);
    let rt = new ActorRuntime({ store, logger: silent, instanceId: 'a' });
    rt.register(intentSessionKind);
    await rt.start();
    await rt.spawn(INTENT_SESSION_KIND, '7:s');
    await rt.send(INTENT_SESSION_KIND, '7:s', complaint());
    const stored = await rt.get(INTENT_SESSION_KIND, '7:s');
    assert.equal(stored.value, 'awaiting_confirmation');
    await rt.stop();
    await store.close();

    store = await openTestStore(dir);
    rt = new ActorRuntime({ store, logger: silent, instanceId: 'b' });
    rt.register(intentSessionKind);
    await rt.start();
    const view = await rt.send(INTENT_SESSION_KIND, '7:s', yes());
    assert.equal((view.context as any).lastTurn.decision.action, 'CREATE_DISPUTE');
    assert.equal(version, 2);
    await rt.stop();
    await store.close();
  });
});
