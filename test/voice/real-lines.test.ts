// What real lines do to a call (issue 39), through a fake Twilio (20 ms μ-law frames) and a fake
// Exotel (100 ms PCM16 chunks) over real loopback sockets, the callees speaking espeak-ng's speech
// cut to exact lengths ("haan|200": the first 200 ms of "haan" from its first sound), heard by the
// gateway's VAD and recognised by the scripted stt upstream:
// - a 0.2 s backchannel over the agent does not cut it; a 0.6 s barge-in does (min_speech_ms 400,
//   counted in speech heard, not in the detector's hang-over or the carrier's chunks);
// - a callee turn's start and end are its voice's, within 200 ms;
// - the last words before a hang-up (the carrier's `stop`, at once) are recognised and recorded;
// - a monologue is cut at the longest utterance (15 s): recognised and recorded piece by piece.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SpeechClip } from '../../src/speech/clip.ts';
import { type CarrierRig, carrierRig } from './carrier-rig.ts';

const LAST_WORDS = 'no thanks I do not need anything goodbye';
const MONOLOGUE = Array.from({ length: 6 }, () => 'my card was blocked and the branch could not help me and nobody called me back').join(' and ');

const CALLEES = [
  // A backchannel 300 ms into the greeting, then a barge-in (each call one of them), then hang up once the agent is done.
  {
    to: '+919800000040',
    answer: 'answer' as const,
    ring_ms: 100,
    steps: [{ wait_agent: 'speaking' as const, ms: 300 }, { say: 'haan|200' }, { wait_agent: 'done' as const, ms: 300 }, { hangup: true as const }],
  },
  {
    to: '+919800000041',
    answer: 'answer' as const,
    ring_ms: 100,
    steps: [
      { wait_agent: 'speaking' as const, ms: 300 },
      { say: 'wait I have a question|600' },
      // The cut lands a chunk or two after the speech (Exotel's are 100 ms): once it has, `done`
      // waits for the agent's answer rather than the cut greeting's end.
      { silence_ms: 400 },
      { wait_agent: 'done' as const, ms: 300 },
      { hangup: true as const },
    ],
  },
  // Silent 3 s, then 0.6 s of speech, then 2 s of silence and the hang-up (the agent waits for the callee).
  {
    to: '+919800000042',
    answer: 'answer' as const,
    ring_ms: 100,
    steps: [{ silence_ms: 3000 }, { say: 'wait I have a question|600' }, { silence_ms: 2000 }, { hangup: true as const }],
  },
  // Says no and hangs up at once.
  { to: '+919800000043', answer: 'answer' as const, ring_ms: 100, steps: [{ silence_ms: 500 }, { say: LAST_WORDS }, { hangup: true as const }] },
  // Talks for 20 s without a pause as long as the endpointing, then is silent.
  {
    to: '+919800000044',
    answer: 'answer' as const,
    ring_ms: 100,
    steps: [{ silence_ms: 300 }, { say: `${MONOLOGUE}|20000` }, { silence_ms: 3000 }, { hangup: true as const }],
  },
];

describe('calls on real lines: backchannels, barge-in, turn times, last words, monologues', () => {
  let rig: CarrierRig;
  before(async () => {
    // espeak-ng's speech from the gateway's tts-local (8 kHz PCM16); "text|ms": that many ms of it from its first sound.
    rig = await carrierRig(CALLEES, {
      async clip(say, speech) {
        const [input, ms] = say.split('|') as [string, string | undefined];
        const pcm = await speech(input);
        if (ms === undefined) return new SpeechClip(pcm);
        let first = 0;
        while (first * 2 < pcm.length && Math.abs(pcm.readInt16LE(first * 2)) < 500) first += 1;
        const clip = pcm.subarray(first * 2, (first + Number(ms) * 8) * 2);
        assert.equal(clip.length, Number(ms) * 16, `"${input}" is long enough`);
        return new SpeechClip(Buffer.from(clip));
      },
    });
  });
  after(() => rig?.close());

  const dialled = (model: string, to: string, body: Record<string, unknown> = {}) => rig.dialled(model, to, body);
  const shape = (c: { transcript: { role: string; response_id?: string; text: string; interrupted?: boolean }[] }) =>
    c.transcript.map((t) => [t.role, t.response_id ?? t.text, t.interrupted ?? false]);

  for (const model of ['voice-twilio', 'voice-exotel']) {
    it(`${model}: a 0.2 s "haan" over the greeting does not cut it and is no turn; a 0.6 s barge-in cuts it`, async () => {
      rig.stt.say('haan');
      const c = await dialled(model, '+919800000040');
      assert.deepEqual(
        shape(c),
        [
          ['agent', 'GEN.GREETING', false],
          ['callee', 'haan', false],
        ],
        JSON.stringify(c.transcript),
      );
      assert.equal(c.metrics.interruptions, 0);
      rig.stt.say('wait I have a question');
      const b = await dialled(model, '+919800000041');
      assert.deepEqual(shape(b).slice(0, 2), [
        ['agent', 'GEN.GREETING', true],
        ['callee', 'wait I have a question', false],
      ]);
      assert.equal(b.transcript[2]?.role, 'agent', 'the barge-in is answered');
      assert.equal(b.metrics.interruptions, 1);
    });

    it(`${model}: the last words before a hang-up are recognised and recorded as the callee's turn`, async () => {
      rig.stt.say(LAST_WORDS);
      const c = await dialled(model, '+919800000043', { first_message: { mode: 'wait_for_callee' } });
      assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup']);
      assert.deepEqual(shape(c), [['callee', LAST_WORDS, false]], 'recorded, and not answered: the line is gone');
    });
  }

  // On both carriers: the simulated Exotel callee sends 100 ms of 8 kHz PCM16 (1,600 bytes) every
  // 100 ms, in real time (it sent 3,200 bytes, 200 ms, every 100 ms until the wire counted right).
  for (const model of ['voice-twilio', 'voice-exotel']) {
    it(`${model}: a callee turn's start and end are its voice's, within 200 ms`, async () => {
      rig.stt.say('wait I have a question');
      const c = await dialled(model, '+919800000042', { first_message: { mode: 'wait_for_callee' } });
      const turn = c.transcript.find((t: { role: string }) => t.role === 'callee');
      assert.ok(turn, JSON.stringify(c.transcript));
      // Times count from the answer, the callee's script from its stream's start, which follows the
      // answer by the carrier's stream set-up (a few ms here, up to a few hundred on a loaded machine):
      // never more than 200 ms earlier than the voice (the defect: turns 1-3 s early), as long as it within 200 ms.
      const span = `spoken 3.0-3.6 s after the stream started, recorded ${turn.start}-${turn.end} s after the answer`;
      assert.ok(turn.start >= 2.8 && turn.start <= 3.5, span);
      assert.ok(Math.abs(turn.end - turn.start - 0.6) <= 0.2, span);
    });
  }

  it('20 s of talking is cut at the longest utterance (15 s): each piece a turn, the agent answers them together', async () => {
    rig.stt.say('my card was blocked', 'and nobody called me back');
    const before = rig.stt.heard.length;
    const c = await dialled('voice-twilio', '+919800000044', { first_message: { mode: 'wait_for_callee' } });
    assert.equal(rig.stt.heard.length - before, 2, 'two utterances recognised');
    const callee = c.transcript.filter((t: { role: string }) => t.role === 'callee');
    assert.deepEqual(
      callee.map((t: { text: string }) => t.text),
      ['my card was blocked', 'and nobody called me back'],
    );
    // The piece is 15 s of audio, the first 0.3 s of it the prefix padding before the voice (found at
    // its true onset since the detector learns a clean line's floor: issue 40), so its voice lasts 14.7 s.
    const voiced = callee[0].end - callee[0].start;
    assert.ok(voiced >= 14.6 && voiced <= 15.3, `the first piece is 15 s of audio: ${JSON.stringify(callee[0])}`);
    assert.ok(Math.abs(callee[1].start - callee[0].end) <= 0.1 && Math.abs(callee[1].end - callee[0].start - 20) <= 0.3, JSON.stringify(callee));
    assert.equal(c.transcript.at(-1).role, 'agent', 'answered once the callee stopped');
  });
});
