// The gateway's own answering-machine detector (src/voice/answering-machine.ts) on a small subset of
// `npm run eval:amd`'s held-out recordings (tts-local's espeak-ng and festival voices through μ-law,
// clean and under line noise): a person's short answer is `human`, a voicemail greeting with its
// beep and a call-screening prompt are `machine`, each within 4 s of the answer, and a greeting's end
// is found at its beep's end (where a message is left). The beep itself: a steady 800–2000 Hz tone,
// never speech or noise.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildCases, detect, HELD_OUT, summary, type Case } from '../../scripts/eval-amd.ts';
import { loadVoiceDetectors, type VoiceDetectors } from '../../src/speech/vad.ts';
import { lineNoise } from '../../src/speech/noise.ts';
import { toneOf } from '../../src/voice/answering-machine.ts';
import { toneSamples } from '../../src/speech/tone.ts';

const tone = (hz: number, n = 160, amplitude = 9000) => toneSamples(hz, n / 8, amplitude);

describe('answering-machine detection', () => {
  let detectors: VoiceDetectors;
  let cases: Case[];
  before(async () => {
    detectors = await loadVoiceDetectors();
    const subset = { voicemail: HELD_OUT.voicemail.slice(0, 2), screening: HELD_OUT.screening.slice(1, 2), person: HELD_OUT.person.slice(0, 3) };
    cases = await buildCases(subset, { voices: ['en-us', 'en-us-slt'], conditions: ['clean', 'white -45 dBFS'] });
  });

  it('tells people from voicemail greetings and screening prompts, each within 4 s, and finds the beep that ends a greeting', () => {
    const outcomes = cases.map((c) => detect(detectors, c));
    const s = summary(outcomes);
    console.log(`# ${s.cases} recordings: ${(100 * s.accuracy!).toFixed(1)} % right, decision p50 ${s.decision_ms.p50} ms, max ${s.decision_ms.max} ms`);
    assert.ok(s.accuracy! >= 0.9, JSON.stringify(s.wrong));
    assert.equal(s.within_4s, 1, `decision times ${JSON.stringify(s.decision_ms)}`);
    for (const o of outcomes.filter((x) => x.c.kind === 'person')) assert.equal(o.answeredBy, 'human', `${o.c.text} ${o.c.voice} ${o.c.condition}`);
    assert.equal(s.greeting_end_after_beep, 1);
    // A screening prompt has no beep: its end is its silence, after its speech.
    for (const o of outcomes.filter((x) => x.c.kind === 'screening' && x.answeredBy === 'machine')) {
      assert.equal(o.endBy, 'silence');
      assert.ok(o.endMs! > o.c.speechEndMs, `${o.endMs} > ${o.c.speechEndMs}`);
    }
  });

  it('a stream that starts late (less of the budget left) never takes a greeting still going for a person', () => {
    for (const c of cases.filter((x) => x.kind !== 'person')) {
      const o = detect(detectors, c, 1000); // 1 s of audio: the greeting has only begun
      assert.notEqual(o.answeredBy, 'human', `${c.text} ${c.voice} ${c.condition}: ${o.detail} at ${o.decisionMs} ms`);
      assert.ok(o.decisionMs <= 1000);
    }
  });

  it('hears a beep as a steady tone of 800–2000 Hz only', () => {
    for (const hz of [800, 1000, 1234, 1400, 2000]) assert.ok(Math.abs(toneOf(tone(hz))! - hz) <= 25, `${hz} Hz`);
    for (const hz of [400, 3000]) assert.equal(toneOf(tone(hz)), null, `${hz} Hz is no beep`);
    assert.equal(toneOf(tone(1000, 160, 50)), null, 'too quiet: line noise');
    assert.equal(toneOf(lineNoise(-20, 'white').next(160)), null, 'noise');
    const chord = tone(500).map((v, i) => v + tone(1700)[i]! + tone(300)[i]!);
    assert.equal(toneOf(chord), null, 'a vowel-like mixture has no tone holding its energy');
  });
});
