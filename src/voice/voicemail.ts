// A call's answering machines (issue 41 §1): when the call asks (its `voicemail`, or its model's),
// who answered is decided while the agent's greeting plays (never holding it back), and a machine
// gets what the call asked for. The decision is the carrier's where it has one we use (Twilio's
// asynchronous AMD, told by its callback through the actor), else the gateway's own detector's
// (src/voice/answering-machine.ts) on the callee's audio, within 3.8 s of audio from the stream's
// first frame (a stream that starts late is heard from its start: the audio before the detector is
// ready is kept for it). Either way it
// goes to the call's actor (`answered_by`: the first one counts, a repeated one changes nothing),
// which tells the webhooks and hands it back here (`answeredBy`), so the call acts once, on the
// decision it records. On `machine` (and an action other than `continue`): the agent stops (its
// reply cut, the carrier told to clear; what the greeting says is transcribed, not answered), then
// `hangup` ends the call, or `leave_message` waits for the greeting's beep (or its silence; Twilio's
// `machine_end_*` says the greeting is over already), plays the message, and ends the call: end
// reason `voicemail`, billed as any answered call.
// On Twilio the gateway's detector listens too (a call that asked to hang up or leave a message):
// Twilio's DetectMessageEnd tells only at the greeting's end, so on the detector's `machine` the agent
// stops at once (cut, `clear`) and waits, saying nothing; Twilio's `machine_end_*` then leaves the
// message, or the detector's beep when it comes first (recorded as the gateway's decision), or, with
// neither, the detector's end of the greeting after CARRIER_GRACE_MS more. Twilio's `human` (or
// `unknown`) coming first is the call's `answered_by` and lets the agent go on.
import type { Logger } from 'pino';
import type { AnsweredByNews } from '../../machines/voice-call.machine.ts';
import { ApiError, echo } from '../errors.ts';
import type { IntentService } from '../intent/service.ts';
import { responseWording } from '../intent/service.ts';
import type { ModelDoc } from '../models/types.ts';
import type { VoiceDetectors } from '../speech/vad.ts';
import { type Voicemail, voicemailProblem } from '../shared/voicemail-schema.ts';
import { type AgentReply, fillVariables, one, replyOf, type ResponseAudio } from './agent.ts';
import { AMD_VAD, AnsweringMachineDetector, type Detection } from './answering-machine.ts';
import type { CallLine } from './call-line.ts';
import type { Speaking } from './speaking.ts';

/** The callee's audio kept from the stream's first frame until the detector is ready: 4 s of 8 kHz at most. */
const MAX_EARLY_SAMPLES = 4 * 8000;
/** On Twilio, how long after the detector heard a greeting end without a beep the gateway waits for Twilio's `machine_end_*` before it decides. */
export const CARRIER_GRACE_MS = 3000;

/**
 * The call's `voicemail` (the body's, else the model's; null: no detection), checked: a
 * `leave_message` has one message; a `response_id` needs the agent's pack to have it (an llm agent
 * has none).
 */
export function checkVoicemail(given: Voicemail | undefined, model: ModelDoc, pack: { responses: object } | null): Voicemail | null {
  const v = given ?? model.voicemail ?? null;
  if (v === null) return null;
  const where = given ? 'voicemail' : `the model '${model._id}''s voicemail`;
  const problem = voicemailProblem(v);
  if (problem) throw new ApiError('invalid_request', `${where}: ${problem.message}`, { param: `voicemail.${problem.field}` });
  if (v.response_id !== undefined && pack === null)
    throw new ApiError('invalid_request', `${where}: an llm agent has no pack; give 'text'.`, { param: 'voicemail.response_id' });
  if (v.response_id !== undefined && !Object.hasOwn(pack!.responses, v.response_id))
    throw new ApiError('invalid_request', `${where}: the agent's pack has no response '${echo(v.response_id)}'.`, { param: 'voicemail.response_id' });
  return v;
}

/** What the message is said with: the call's voice, and its pack for a `response_id`. */
export interface MessageVoice {
  audio: ResponseAudio;
  tts: ModelDoc;
  voice: string;
  language: string;
  variables: Record<string, string>;
  intent: Pick<IntentService, 'packOf'>;
  intentModel: ModelDoc | null;
}

/** The message of a `leave_message` voicemail, rendered in the call's voice (null: none, or its wording is gone). */
export async function voicemailMessage(v: Voicemail, o: MessageVoice): Promise<AgentReply | null> {
  let wording = v.text ?? null;
  if (v.response_id !== undefined && o.intentModel) {
    const pack = await o.intent.packOf(o.intentModel);
    wording = pack ? responseWording(pack, v.response_id, o.language) : null;
  }
  if (wording === null) return null;
  const text = fillVariables(wording, o.variables);
  const line = { text, audio: await o.audio.render(o.tts, o.voice, o.language, text) };
  return { ...replyOf(one(line), v.response_id ?? null), action: 'VOICEMAIL' };
}

export interface CallVoicemailDeps {
  /** The call's `voicemail`; null: the call did not ask (nothing is detected). */
  plan: Voicemail | null;
  line: CallLine;
  speaking: Speaking;
  message(): Promise<AgentReply | null>;
  log: Logger;
  now(): number;
}

export class CallVoicemail {
  private detector: AnsweringMachineDetector | null = null;
  /** The callee's audio from the stream's first frame, until the detector is ready (null: not kept). */
  private early: Int16Array[] | null;
  private earlySamples = 0;
  /** Twilio's AMD decides `answered_by`: the detector only holds the agent back (and decides when Twilio is late). */
  private carrierDecides = false;
  /** The detector heard a machine first: the agent is silent, waiting for the greeting's end. */
  private held: Detection | null = null;
  /** The actor told the call's decision: a later `machine` of the detector holds nothing back. */
  private decided = false;
  private acted = false;
  private greetingOver!: () => void;
  private readonly greetingEnded = new Promise<void>((resolve) => (this.greetingOver = resolve));

  constructor(private readonly deps: CallVoicemailDeps) {
    this.early = deps.plan === null ? null : [];
  }

  /**
   * The stream started: the gateway's own detector listens when the call asked (on a carrier that
   * detects, `carrierDetects`, only for a call that acts on a machine), hearing the audio kept since
   * the stream's first frame first; the message is rendered.
   */
  start(detectors: VoiceDetectors, carrierDetects: boolean): void {
    const { plan, line } = this.deps;
    const early = this.early ?? [];
    this.early = null;
    // The message is rendered now (kept), so it is in hand when the greeting ends.
    if (plan?.action === 'leave_message')
      this.deps.message().catch((err: unknown) => this.deps.log.warn({ err }, 'the voicemail message could not be rendered'));
    if (plan === null || (carrierDetects && plan.action === 'continue') || line.answeredAt === null) return;
    this.carrierDecides = carrierDetects;
    this.detector = new AnsweringMachineDetector(detectors.create(AMD_VAD));
    for (const samples of early) this.audio(samples);
  }

  /** The callee's audio (8 kHz PCM). */
  audio(samples: Int16Array): void {
    if (this.early) {
      if (this.earlySamples + samples.length <= MAX_EARLY_SAMPLES) this.early.push(samples.slice());
      this.earlySamples += samples.length;
      return;
    }
    const detector = this.detector;
    if (!detector) return;
    const { decision, ended } = detector.push(samples);
    if (decision && this.carrierDecides) this.heardFirst(decision);
    else if (decision) {
      this.tell(decision.answeredBy, decision.detail);
      if (decision.answeredBy !== 'machine') this.close(); // nothing more to hear
    }
    if (ended) {
      this.greetingOver();
      this.close();
      // On Twilio, held back: the beep is the greeting's end now; a silence waits a little for Twilio's word.
      const held = this.held;
      if (held && ended.by === 'beep') this.tell('machine', 'beep');
      else if (held) setTimeout(() => this.held && this.tell('machine', held.detail), CARRIER_GRACE_MS).unref();
    }
  }

  /** The gateway's decision, to the actor (the first one it hears counts). */
  private tell(answeredBy: Detection['answeredBy'], detail: Detection['detail']): void {
    const line = this.deps.line;
    if (this.acted || line.over) return;
    const now = this.deps.now();
    const news = { answeredBy, detail, source: 'gateway' as const, decisionMs: now - (line.answeredAt ?? now) };
    this.deps.log.info({ answered_by: news.answeredBy, detail: news.detail, decision_ms: news.decisionMs }, 'answering-machine detection');
    line.record({ type: 'answered_by', now, ...news });
  }

  /** On Twilio, the detector decided before Twilio: a machine holds the agent back (nothing said or answered) until the greeting's end. */
  private heardFirst(decision: Detection): void {
    const { line, speaking, log } = this.deps;
    log.info({ answered_by: decision.answeredBy, detail: decision.detail }, "answering-machine detection (the carrier's decides answered_by)");
    if (decision.answeredBy !== 'machine') return this.close(); // Twilio's word decides
    if (this.decided || this.acted || line.over || line.closing) return this.close();
    this.held = decision;
    line.closing = true;
    speaking.cut();
    speaking.stop();
  }

  /** The actor's decision (the first, once): a machine gets the call's `voicemail`. */
  answeredBy(news: AnsweredByNews): void {
    const { plan, line, speaking } = this.deps;
    this.decided = true;
    if (this.held && !this.acted && news.answeredBy !== 'machine' && !line.over) {
      // Twilio heard a person (or could not tell): its word stands, and the agent goes on.
      this.held = null;
      line.closing = false;
      this.close();
      this.deps.log.info({ answered_by: news.answeredBy }, 'the agent goes on: the carrier did not hear a machine');
    }
    if (this.acted || plan === null || plan.action === 'continue' || news.answeredBy !== 'machine' || line.over) return;
    this.acted = true;
    line.closing = true; // nothing more is answered
    speaking.cut();
    speaking.stop();
    if (news.source !== 'gateway') this.greetingOver(); // Twilio's DetectMessageEnd decides at the greeting's end
    void this.leave(plan).catch((err: unknown) => this.deps.log.warn({ err }, 'the voicemail could not be left'));
  }

  private async leave(plan: Voicemail): Promise<void> {
    const line = this.deps.line;
    if (plan.action === 'leave_message') {
      const message = this.deps.message(); // rendered while the greeting plays
      message.catch(() => undefined);
      await this.greetingEnded;
      if (line.over) return;
      await this.deps.speaking.respond(() => message, null, true);
    }
    await line.end('voicemail');
  }

  close(): void {
    this.detector?.close();
    this.detector = null;
  }
}
