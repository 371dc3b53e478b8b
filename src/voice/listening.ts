// A call's listening side: the carrier's audio (8 kHz PCM) through the shared listening stage
// (src/speech/listening.ts: VAD → an utterance per speech), each utterance recognised by the call's
// stt model and answered by the agent, one at a time in order; DTMF keyed by the callee; the
// endpointing (`endpointing_ms.min` of silence ends the callee's turn, `max` while digits are
// expected); and the barge-in: `min_speech_ms` of the callee's voiced audio over the agent's audio
// stops the reply (src/voice/speaking.ts). Speech that runs to the longest utterance is cut there:
// the piece is recognised and recorded as a turn, and answered with the rest once the callee
// stops. When the callee hangs up (`flush`), what they were saying is recognised and recorded,
// not answered. A callee turn's `start` and `end` are its voice's (the audio's clock, not the
// moment the endpointing decided).
import type { Logger } from 'pino';
import { Listener, type HeardUtterance, type UtteranceEnd } from '../speech/listening.ts';
import type { VoiceDetectors } from '../speech/vad.ts';
import type { CallLine, Conversation } from './call-line.ts';
import type { Speaking } from './speaking.ts';
import type { CalleeTurnTimes } from './turn-stages.ts';

const RATE = 8000;
const PREFIX_MS = 300;
/** A callee's speech this long is cut: the piece is recognised and recorded (30 s of talking made no turn at all before). */
export const MAX_UTTERANCE_MS = 15_000;

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
  /** The text of pieces cut at the longest utterance, answered with the rest of the speech. */
  private held: string[] = [];
  /** Keys pressed since the last keyed turn, and the timer of the pause that ends them. */
  private keys = '';
  private keysTimer: NodeJS.Timeout | null = null;
  /** When the last key was pressed (the end of a keyed turn, for its latency). */
  private lastKeyAt = 0;

  constructor(private readonly deps: CallListeningDeps) {}

  /** The stream started: the detector is made (audio before it is not listened to). */
  start(detectors: VoiceDetectors): void {
    this.listener = new Listener(
      {
        rate: RATE,
        detectors,
        detection: { prefixPaddingMs: PREFIX_MS, silenceMs: this.deps.turn.endpointingMs.min },
        maxUtteranceMs: MAX_UTTERANCE_MS,
        bufferMs: MAX_UTTERANCE_MS + PREFIX_MS + 2000,
        keepExtraMs: 0,
        overlap: false,
      },
      { speechStarted: () => (this.overAgent = this.deps.speaking.playing), utterance: (u, why) => this.heard(u, why) },
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
    // While the agent waits for the integrator's answers it is the callee's turn to take too.
    const speaking = this.deps.speaking;
    if (voicedMs !== null && (speaking.playing || speaking.waiting) && enabled && voicedMs >= minSpeechMs) speaking.bargeIn();
  }

  /**
   * A key: recorded as it is pressed, and kept for the agent's turn. The keys up to `#` (not part of
   * the turn's text; `#` alone is the turn "#"), or up to a pause with no key of the endpointing's
   * silence (`max` while the agent's reply asked for digits, else `min`), are one turn of the
   * agent, answered in order with the utterances. While the callee speaks the pause waits.
   */
  dtmf(digit: string): void {
    const line = this.deps.line;
    this.deps.speaking.digitsKeyed = true;
    this.endpoint();
    const at = line.clock();
    line.record({ type: 'turn', now: this.deps.now(), turn: { role: 'callee', text: digit, dtmf: digit, start: at, end: at } });
    line.prompts = 0; // the callee is there
    line.lastActivityAt = this.lastKeyAt = this.deps.now();
    if (digit !== '#') this.keys += digit;
    if (digit === '#') this.keyed();
    else this.keysEnd(setTimeout(() => this.keyed(), this.keysPauseMs()));
  }

  private keysPauseMs(): number {
    const { min, max } = this.deps.turn.endpointingMs;
    return this.deps.speaking.digitsAsked ? max : min;
  }

  private keysEnd(next: NodeJS.Timeout | null = null): void {
    if (this.keysTimer) clearTimeout(this.keysTimer);
    this.keysTimer = next;
  }

  /** The keyed turn ends (`#` or its pause): the agent answers it after the turns before it. */
  private keyed(): void {
    if (this.speaking) {
      this.keysEnd(setTimeout(() => this.keyed(), this.keysPauseMs())); // the speech's turn first
      return;
    }
    this.keysEnd();
    const text = this.keys || '#';
    this.keys = '';
    const line = this.deps.line;
    const cut = this.deps.now();
    const ended = Math.min(this.lastKeyAt, cut);
    line.enqueue(async () => {
      if (line.over || line.closing) return;
      const { agent } = this.deps.talk();
      const taken = this.deps.now(); // nothing to recognise
      await this.deps.speaking.respond((signal) => agent.reply(text, signal), { ended, cut, recognising: taken, recognised: taken });
    }, 'a keyed turn failed');
  }

  /** The silence that ends the callee's turn, as the conversation stands (see `digitsAsked`). */
  endpoint(): void {
    const { min, max } = this.deps.turn.endpointingMs;
    const speaking = this.deps.speaking;
    this.listener?.setSilence(speaking.digitsAsked || speaking.digitsKeyed ? max : min);
  }

  /** The line is gone: the speech in progress is an utterance (the callee's last words), however short its silence. */
  flush(): void {
    this.listener?.flush();
  }

  close(): void {
    this.keysEnd();
    this.listener?.close();
    this.listener = null;
  }

  /**
   * An utterance ended (its silence heard, the longest utterance, or the hang-up): recognised and
   * answered after the turns before it. Its voice's times come from the audio's clock: the last
   * sample fed is now.
   */
  private heard(u: HeardUtterance, why: UtteranceEnd): void {
    const line = this.deps.line;
    const at = this.deps.now();
    const total = this.listener?.total ?? u.to;
    const voice = { start: at - ((total - u.voiceFrom) * 1000) / RATE, end: at - ((total - u.voiceTo) * 1000) / RATE };
    line.prompts = 0; // the callee is there
    const overAgent = this.overAgent || this.deps.speaking.playing;
    line.enqueue(() => this.answer(u.samples, voice, at, why, overAgent), 'a turn failed');
  }

  private async answer(samples: Int16Array, voice: { start: number; end: number }, cut: number, why: UtteranceEnd, overAgent: boolean): Promise<void> {
    const line = this.deps.line;
    if (line.over) return;
    const { agent, recognise } = this.deps.talk();
    const recognising = this.deps.now();
    // Recognised with what the agent's last words lead it to expect (the question, the answer's shape).
    const readings = await recognise(samples, line.abort.signal, agent.listening());
    // The first reading the agent understands, when the recogniser gave several (src/voice/understanding.ts).
    const text = ((readings.alternatives && (await agent.understood?.(readings.alternatives))) || readings.text).trim();
    // The turn's times (src/voice/turn-stages.ts): its latency runs from the end of the voice, as the carrier's does.
    const heard: CalleeTurnTimes = { ended: Math.min(voice.end, cut), cut, recognising, recognised: this.deps.now() };
    // The reply to answers this speech was over (src/voice/speaking.ts): said only if the speech is no turn.
    const stale = this.deps.speaking.takeStale();
    const sayStale = async () => void (stale && !line.over && !line.closing && (await this.deps.speaking.respond(stale, null)));
    if (!text) return sayStale();
    const ignored = this.deps.turn.interruption.ignore.includes(text.toLowerCase().replace(/[.!?,]/g, ''));
    const now = line.goneAt ?? this.deps.now(); // the last words of a line gone: at the hang-up (nothing billed after it)
    line.record({ type: 'turn', now, turn: { role: 'callee', text, start: line.clock(voice.start), end: line.clock(voice.end) } });
    // A piece of speech cut at the longest utterance is answered with the rest; nothing is answered
    // once the callee hung up (their last words are recorded) or the credit guard is closing the
    // call (an action whose confirmation cannot play is not taken).
    if (why === 'longest') return void this.held.push(text);
    if (line.goneAt !== null || line.closing) return;
    // A backchannel said over the agent is not a turn ("haan", "ok"), though the agent's reply
    // may have ended by the time it is recognised.
    if (ignored && (overAgent || this.deps.speaking.playing || stale)) return sayStale();
    const said = [...this.held, text].join(' ');
    this.held = [];
    await this.deps.speaking.respond((signal) => agent.reply(said, signal), heard);
  }
}
