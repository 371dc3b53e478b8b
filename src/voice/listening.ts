// A call's listening side: the carrier's audio (8 kHz PCM) through the shared listening stage
// (src/speech/listening.ts: VAD → an utterance per speech), each utterance recognised by the call's
// stt model and answered by the agent, one at a time in order; DTMF keyed by the callee; the
// endpointing (`endpointing_ms.min` of silence ends the callee's turn, `max` while digits are
// expected); and the barge-in: callee speech of the detector's `min_speech_ms` over the agent's
// audio stops the reply (src/voice/speaking.ts).
import type { Logger } from 'pino';
import { Listener, type HeardUtterance } from '../speech/listening.ts';
import type { VoiceDetectors } from '../speech/vad.ts';
import type { CallLine, Conversation } from './call-line.ts';
import type { Speaking } from './speaking.ts';

const RATE = 8000;
const PREFIX_MS = 300;
const MAX_UTTERANCE_MS = 30_000;

export interface TurnSettings {
  /** Silence that ends the callee's utterance: `min` normally, `max` while digits are expected. */
  endpointingMs: { min: number; max: number };
  interruption: { enabled: boolean; minSpeechMs: number; ignore: string[] };
}

export interface CallListeningDeps {
  line: CallLine;
  speaking: Speaking;
  turn: TurnSettings;
  /** The call's agent and recogniser (built at the answer). */
  talk(): Conversation;
  log: Logger;
  now(): number;
}

export class CallListening {
  private listener: Listener | null = null;

  constructor(private readonly deps: CallListeningDeps) {}

  /** The stream started: the detector is made (audio before it is not listened to). */
  start(detectors: VoiceDetectors): void {
    this.listener = new Listener(
      {
        rate: RATE,
        detectors,
        detection: { prefixPaddingMs: PREFIX_MS, silenceMs: this.deps.turn.endpointingMs.min },
        maxUtteranceMs: Infinity, // a call's speech is never cut: it ends with its silence
        bufferMs: MAX_UTTERANCE_MS + PREFIX_MS + 2000,
        keepExtraMs: 0,
        overlap: false,
      },
      { utterance: (u) => this.heard(u) },
    );
  }

  /** A speech is in progress (the silence watchdog waits). */
  get speaking(): boolean {
    return this.listener?.speaking ?? false;
  }

  audio(samples: Int16Array): void {
    const listener = this.listener;
    if (!listener) return;
    listener.push(samples);
    // Barge-in: the callee has been speaking min_speech_ms over the agent's audio (a click or a
    // cough is shorter). The detector's own onset is 60 ms of voice; words are shorter than 200 ms.
    const { enabled, minSpeechMs } = this.deps.turn.interruption;
    const speechMs = listener.speechMs;
    if (speechMs !== null && this.deps.speaking.playing && enabled && speechMs >= minSpeechMs) this.deps.speaking.bargeIn();
  }

  dtmf(digit: string): void {
    this.deps.speaking.digitsKeyed = true;
    this.endpoint();
    const at = this.deps.line.clock();
    this.deps.line.record({ type: 'turn', now: this.deps.now(), turn: { role: 'callee', text: digit, dtmf: digit, start: at, end: at } });
  }

  /** The silence that ends the callee's turn, as the conversation stands (see `digitsAsked`). */
  endpoint(): void {
    const { min, max } = this.deps.turn.endpointingMs;
    const speaking = this.deps.speaking;
    this.listener?.setSilence(speaking.digitsAsked || speaking.digitsKeyed ? max : min);
  }

  close(): void {
    this.listener?.close();
    this.listener = null;
  }

  /** An utterance ended (its silence heard): recognised and answered after the turns before it. */
  private heard(u: HeardUtterance): void {
    const line = this.deps.line;
    const utterance = u.samples;
    const at = this.deps.now();
    const startedAt = at - (utterance.length * 1000) / RATE;
    line.prompts = 0; // the callee is there
    line.enqueue(() => this.answer(utterance, startedAt, at), 'a turn failed');
  }

  private async answer(samples: Int16Array, startedAt: number, endedAt: number): Promise<void> {
    const line = this.deps.line;
    if (line.over) return;
    const { agent, recognise } = this.deps.talk();
    const text = (await recognise(samples, line.abort.signal)).trim();
    if (!text) return;
    const ignored = this.deps.turn.interruption.ignore.includes(text.toLowerCase().replace(/[.!?,]/g, ''));
    line.record({ type: 'turn', now: this.deps.now(), turn: { role: 'callee', text, start: line.clock(startedAt), end: line.clock(endedAt) } });
    // A backchannel while the agent speaks is not a turn ("haan", "ok"); once the credit guard is
    // closing the call, nothing is answered (an action whose confirmation cannot play is not taken).
    if ((ignored && this.deps.speaking.playing) || line.closing) return;
    await this.deps.speaking.respond((signal) => agent.reply(text, signal), endedAt);
  }
}
