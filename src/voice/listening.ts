// A call's listening side: the carrier's audio (8 kHz PCM) through the shared listening stage
// (src/speech/listening.ts: VAD → an utterance per speech), each utterance recognised by the call's
// stt model and answered by the agent, one at a time in order; DTMF keyed by the callee; the
// endpointing (`endpointing_ms.min` of silence ends the callee's turn, `max` while digits are
// expected); and the barge-in: `min_speech_ms` of the callee's voiced audio over the agent's audio
// stops the reply (src/voice/speaking.ts). A callee turn's `start` and `end` are its voice's (the audio's clock, not the
// moment the endpointing decided).
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
  /** The speech in progress began while the agent's reply played (a backchannel in it is no turn). */
  private overAgent = false;

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
      { speechStarted: () => (this.overAgent = this.deps.speaking.playing), utterance: (u) => this.heard(u) },
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
    // Barge-in: the callee's voiced audio in this speech reached min_speech_ms over the agent's
    // audio (a backchannel, a click or a cough is shorter). Voiced frames are counted, not the time
    // since the onset: that counted the detector's hang-over after a short "haan" as speech.
    const { enabled, minSpeechMs } = this.deps.turn.interruption;
    const voicedMs = listener.voicedMs;
    if (voicedMs !== null && this.deps.speaking.playing && enabled && voicedMs >= minSpeechMs) this.deps.speaking.bargeIn();
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

  /**
   * An utterance ended (its silence heard): recognised and answered after the turns before it. Its voice's times come from the audio's clock: the last
   * sample fed is now.
   */
  private heard(u: HeardUtterance): void {
    const line = this.deps.line;
    const at = this.deps.now();
    const total = this.listener?.total ?? u.to;
    const voice = { start: at - ((total - u.voiceFrom) * 1000) / RATE, end: at - ((total - u.voiceTo) * 1000) / RATE };
    line.prompts = 0; // the callee is there
    const overAgent = this.overAgent || this.deps.speaking.playing;
    line.enqueue(() => this.answer(u.samples, voice, at, overAgent), 'a turn failed');
  }

  private async answer(samples: Int16Array, voice: { start: number; end: number }, heardAt: number, overAgent: boolean): Promise<void> {
    const line = this.deps.line;
    if (line.over) return;
    const { agent, recognise } = this.deps.talk();
    const text = (await recognise(samples, line.abort.signal)).trim();
    if (!text) return;
    const ignored = this.deps.turn.interruption.ignore.includes(text.toLowerCase().replace(/[.!?,]/g, ''));
    line.record({ type: 'turn', now: this.deps.now(), turn: { role: 'callee', text, start: line.clock(voice.start), end: line.clock(voice.end) } });
    // Once the credit guard is closing the call, nothing is answered (an action whose confirmation
    // cannot play is not taken).
    if (line.closing) return;
    // A backchannel said over the agent is not a turn ("haan", "ok"), though the agent's reply
    // may have ended by the time it is recognised.
    if (ignored && (overAgent || this.deps.speaking.playing)) return;
    await this.deps.speaking.respond((signal) => agent.reply(text, signal), heardAt);
  }
}
