// Keys the agent sends (DTMF), to navigate the phone menu of the number it called:
// POST /v1/voice/calls/{id}/dtmf {digits}. Neither carrier's media stream can carry a key from the
// bot (Twilio's Media Streams take `media`, `mark` and `clear`; Exotel's Voicebot the same), and
// Twilio's other way, updating the call with `<Play digits>`, replaces the TwiML and so ends the
// stream. So the keys are generated in-band: each digit's two ITU-T Q.23 tones, 8 kHz PCM16 (μ-law
// for Twilio, as every reply), played into the agent's stream as one agent turn, after what the
// agent is saying. A callee's menu (or a carrier's in-band detector) hears them as a phone's keys.
import { SpeechClip } from '../speech/clip.ts';
import { one, replyOf, type AgentReply } from './agent.ts';

/** The keypad's low (row) and high (column) frequencies, Hz (ITU-T Q.23). */
export const DTMF_FREQUENCIES: Readonly<Record<string, readonly [number, number]>> = {
  '1': [697, 1209],
  '2': [697, 1336],
  '3': [697, 1477],
  A: [697, 1633],
  '4': [770, 1209],
  '5': [770, 1336],
  '6': [770, 1477],
  B: [770, 1633],
  '7': [852, 1209],
  '8': [852, 1336],
  '9': [852, 1477],
  C: [852, 1633],
  '*': [941, 1209],
  '0': [941, 1336],
  '#': [941, 1477],
  D: [941, 1633],
};

/** Digits the API takes: the keypad's, and `w` for half a second's pause (as Twilio's `sendDigits`). */
export const DIGITS_PATTERN = '^[0-9*#A-Dw]{1,32}$';

const RATE = 8000;
/** Each key sounds this long, then this much silence: well over Q.24's 40 ms minimum each, as a phone's keys are. */
export const TONE_MS = 120;
export const GAP_MS = 80;
const PAUSE_MS = 500;
/** Each tone's peak: -9 dBFS, so the pair never clips (and survives μ-law). */
const AMPLITUDE = 0.35 * 32767;

/** The keys as 8 kHz PCM16: each digit's tone pair then a gap; `w` a pause. */
export function dtmfTones(digits: string): SpeechClip {
  const toneN = (RATE * TONE_MS) / 1000;
  const gapN = (RATE * GAP_MS) / 1000;
  const lengths = [...digits].map((d) => (d === 'w' ? (RATE * PAUSE_MS) / 1000 : toneN + gapN));
  const samples = new Int16Array(lengths.reduce((a, b) => a + b, 0));
  let at = 0;
  [...digits].forEach((d, i) => {
    const pair = DTMF_FREQUENCIES[d];
    if (pair) {
      const [low, high] = pair;
      for (let n = 0; n < toneN; n++) {
        // A 5 ms ramp at each end: no click, so no energy outside the two tones.
        const ramp = Math.min(1, n / 40, (toneN - 1 - n) / 40);
        const v = AMPLITUDE * ramp * (Math.sin((2 * Math.PI * low * n) / RATE) + Math.sin((2 * Math.PI * high * n) / RATE));
        samples[at + n] = Math.round(v);
      }
    }
    at += lengths[i]!;
  });
  return new SpeechClip(Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength));
}

/** The keys as an agent reply: one line of tones, recorded as an agent turn with `dtmf` (its text the digits). */
export function keysReply(digits: string): AgentReply {
  return { ...replyOf(one({ text: digits, audio: dtmfTones(digits) })), dtmf: digits };
}
