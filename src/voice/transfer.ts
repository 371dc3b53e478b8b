// Cold transfers: a call handed from the agent to a person at another number (issue 41 §2).
//   POST /v1/voice/calls/{id}/transfer {to, mode: "cold"}  → the actor's `api.transfer` (a control: src/voice/transfer-request.ts)
//   the pack's escalation to a person (an ESCALATE into AGENT_HANDOFF) → the live side's `agent.transfer`,
//     when the call was placed with a `transfer_to`
// Either way the actor enters `transferring` (machines/voice-call.machine.ts), whose once-only
// `transfer` step (src/voice/kind.ts) asks the live side to hand off (`handOff`, below): the agent's
// hand-off line plays whole (an API transfer's: the pack's `GEN.AGENT`; the escalation's is the reply
// that escalated), nothing else is said or answered, then the carrier bridges the callee to the
// number (its `transfer`: Twilio updates the live call with `<Dial>`; an Exotel flow's stream ends and
// the flow's Connect applet dials; the simulator's callee is put through to its transfer callee).
// The gateway's part of the call ends there: `completed`, `transferred`, billed to that moment; the
// carrier's call goes on without the gateway and is never hung up by it.
import type { Logger } from 'pino';
import { responseWording, type IntentService } from '../intent/service.ts';
import type { ModelDoc } from '../models/types.ts';
import { one, replyOf, type AgentReply, type ResponseAudio } from './agent.ts';
import type { CallLine } from './call-line.ts';

/** The pack's state an escalation to a person moves to (the demo pack's "talk to an agent" and "the ATM kept my card"). */
export const HANDOFF_STATE = 'AGENT_HANDOFF';
/** The pack's hand-off line, said before an API transfer. */
export const HANDOFF_RESPONSE = 'GEN.AGENT';

/** Whether an agent's reply hands the callee to a person: the pack's ESCALATE into AGENT_HANDOFF (other escalations end the call). */
export const escalatesToPerson = (reply: Pick<AgentReply, 'action' | 'nextState'>): boolean => reply.action === 'ESCALATE' && reply.nextState === HANDOFF_STATE;

/** What the live side's hand-off needs of the call's pieces (src/voice/media.ts gives them). */
export interface HandOffDeps {
  line: CallLine;
  /** The call's speaking side (src/voice/speaking.ts): its reply cut and stopped, the line said. */
  speaking: {
    cut(): unknown;
    stop(): void;
    respond(make: () => Promise<AgentReply | null>, heard: null, last: boolean): Promise<void>;
  };
  /** The agent's hand-off line (null: it says nothing first). */
  words(): Promise<AgentReply | null>;
  /** Stops the call's watchdogs and heartbeat: from here the line is the carrier's. */
  stopTimers(): void;
  /** Asks the carrier that took the call to bridge it to `to` (after which its stream ends: not a hang-up). */
  bridge(to: string): Promise<void>;
  /** Records that the carrier is about to be asked, at `at` (the actor's once-only step): a restart then never hangs the call up. */
  asking?(at: number): Promise<unknown>;
  log: Logger;
  now(): number;
}

/**
 * The live side of a transfer: the hand-off line (an API transfer's) cuts what the agent was saying
 * and plays whole, as the credit guard's last words do (`closing`: no barge-in, nothing answered);
 * then the carrier bridges. Resolves with the moment the carrier took the hand-off (the gateway's
 * seconds end there); rejects when the callee hung up first or the carrier refused.
 */
export async function handOff(d: HandOffDeps, to: string, by: 'api' | 'agent'): Promise<number> {
  const line = d.line;
  const gone = () => line.over || line.goneAt !== null;
  if (gone()) throw new Error('the call is over');
  line.closing = true;
  if (by === 'api') {
    d.speaking.cut();
    d.speaking.stop();
    const words = await d.words().catch((err: unknown) => {
      d.log.warn({ err }, 'the hand-off line could not be rendered');
      return null;
    });
    if (words) await d.speaking.respond(async () => words, null, true);
  }
  if (gone()) throw new Error('the callee hung up before the hand-off');
  d.stopTimers();
  const at = d.now();
  await d.asking?.(at);
  await d.bridge(to);
  d.log.info({ transferred_to: to }, 'call handed off');
  return at;
}

/** The pack's hand-off line in the call's voice (rendered once, kept), as a reply; null when the pack has none in the call's language. */
export async function handoffWords(o: {
  intent: Pick<IntentService, 'packOf'>;
  intentModel: ModelDoc | null;
  audio: ResponseAudio;
  tts: ModelDoc;
  voice: string;
  language: string;
}): Promise<AgentReply | null> {
  const pack = o.intentModel ? await o.intent.packOf(o.intentModel) : null;
  const text = pack ? responseWording(pack, HANDOFF_RESPONSE, o.language) : null;
  if (text === null) return null;
  return replyOf(one({ text, audio: await o.audio.render(o.tts, o.voice, o.language, text) }), HANDOFF_RESPONSE);
}
