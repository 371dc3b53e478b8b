// Line noise is not speech (issue 39, item 5): phone lines carry noise around -40 dBFS, under the
// callee's speech and in its silences. Through a fake Twilio (20 ms μ-law frames) and a fake Exotel
// (100 ms PCM16 chunks) over real loopback sockets, callees whose line carries white or pink noise
// at -40 dBFS (the simulator's `noise`, generated: src/speech/noise.ts), all through or rising from
// a -55 dBFS hiss (a line that gets noisier), heard by the gateway's VAD and recognised by the
// scripted stt upstream:
// - the agent's reply comes as soon after the callee stops on a noisy line as on a clean one
//   (within MARGIN_MS and one carrier chunk, measured at the carrier: from the callee's last frame of speech to the
//   agent's first audio frame); a rise of the noise was speech for 3 s before (the reply 1-2 s late);
// - noise alone is never an utterance (nothing is sent to the recogniser) nor a barge-in (the
//   greeting it plays under is not cut); a rise of it cut the greeting 400 ms in before.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SpeechClip } from '../../src/speech/clip.ts';
import { type CarrierRig, carrierRig } from './carrier-rig.ts';

/** How much later a reply may come on a noisy line than on a clean one. */
const MARGIN_MS = 300;
// A short sentence (1.1 s): a rise of the noise under a longer one was over by the time it ended.
const SAID = 'my card is blocked';
type Noise = { dbfs: number; color: 'white' | 'pink'; after_ms?: number; before_dbfs?: number };
/** The noisy lines a sentence is said on (the speech starts 2 s into the stream). */
const NOISY: { to: string; what: string; noise: Noise }[] = [
  { to: '+919800000061', what: 'white noise all through', noise: { dbfs: -40, color: 'white' } },
  { to: '+919800000062', what: 'pink noise all through', noise: { dbfs: -40, color: 'pink' } },
  {
    to: '+919800000065',
    what: 'white noise rising from -55 dBFS 1 s before the speech',
    noise: { dbfs: -40, color: 'white', after_ms: 1000, before_dbfs: -55 },
  },
  { to: '+919800000066', what: 'pink noise rising from -55 dBFS with the speech', noise: { dbfs: -40, color: 'pink', after_ms: 2000, before_dbfs: -55 } },
];

/** 2 s on the line, the sentence, then a hang-up once the agent answers. */
const speaker = (to: string, noise?: Noise) => ({
  to,
  answer: 'answer' as const,
  ring_ms: 100,
  ...(noise ? { noise } : {}),
  steps: [{ silence_ms: 2000 }, { say: SAID }, { wait_agent: 'speaking' as const, ms: 100 }, { hangup: true as const }],
});
/** Noise only: under the greeting (from `after_ms`), then 4 s of it after, then the hang-up. */
const listener = (to: string, noise: Noise) => ({
  to,
  answer: 'answer' as const,
  ring_ms: 100,
  noise,
  steps: [{ wait_agent: 'done' as const, ms: 4000 }, { hangup: true as const }],
});
const LISTENERS = [
  listener('+919800000063', { dbfs: -40, color: 'pink' }),
  listener('+919800000064', { dbfs: -40, color: 'white', after_ms: 1000, before_dbfs: -55 }),
];
const CALLEES = [speaker('+919800000060'), ...NOISY.map((n) => speaker(n.to, n.noise)), ...LISTENERS];

describe('line noise at -40 dBFS is not speech', () => {
  let rig: CarrierRig;
  const replies: number[] = [];
  before(async () => {
    rig = await carrierRig(CALLEES, {
      // espeak-ng's speech from its first sound to its last: the clip's last frame is the end of the speech.
      async clip(say, speech) {
        const pcm = await speech(say);
        const loud = (i: number) => Math.abs(pcm.readInt16LE(i * 2)) >= 500;
        let [first, last] = [0, pcm.length / 2 - 1];
        while (first < last && !loud(first)) first += 1;
        while (last > first && !loud(last)) last -= 1;
        return new SpeechClip(Buffer.from(pcm.subarray(first * 2, (last + 1) * 2)));
      },
      onReply: (_sid, ms) => void replies.push(ms),
    });
  });
  after(() => rig?.close());

  /** The call, the utterances the gateway sent the recogniser, and the reply delays the carrier saw. */
  const dialled = async (model: string, to: string, body: Record<string, unknown> = {}) => {
    const heard = rig.stt.heard.length;
    replies.length = 0;
    const c = await rig.dialled(model, to, body);
    return { c, utterances: rig.stt.heard.length - heard, replies: [...replies] };
  };

  for (const model of ['voice-twilio', 'voice-exotel']) {
    it(`${model}: the reply comes as soon after the callee stops on a -40 dBFS line as on a clean one (±${MARGIN_MS} ms and a chunk)`, async () => {
      const said = async (to: string, what: string) => {
        rig.stt.say(SAID);
        const { c, utterances, replies: delays } = await dialled(model, to, { first_message: { mode: 'wait_for_callee' } });
        assert.equal(utterances, 1, `${what}: one utterance, the sentence (${JSON.stringify(c.transcript)})`);
        assert.equal(delays.length, 1, `${what}: the agent answered (${JSON.stringify(c.transcript)})`);
        return delays[0]!;
      };
      await said('+919800000060', 'a clean line, warming up'); // the gateway's first reply on this carrier does first-time work
      const clean = await said('+919800000060', 'a clean line');
      const figures = [`clean ${clean} ms`];
      for (const { to, what } of NOISY) {
        // A loaded machine delays any one reply by hundreds of ms: a reply over the margin is measured once more, the better counted.
        let delay = await said(to, what);
        if (delay > clean + MARGIN_MS) delay = Math.min(delay, await said(to, `${what}, again`));
        figures.push(`${what} ${delay} ms`);
        // Plus one of the carrier's chunks: the detector judges the noise's steadiness on whole chunks
        // (Exotel's 100 ms, since its fake sends them at the real rate; Twilio's 20 ms).
        const margin = MARGIN_MS + (model === 'voice-exotel' ? 100 : 20);
        assert.ok(delay <= clean + margin, `${model}: the reply's delay after the callee stopped: ${figures.join(', ')}`);
      }
      console.log(`${model}: reply after the callee stopped: ${figures.join(', ')}`);
    });

    it(`${model}: noise alone is no turn and no barge-in`, async () => {
      // Both lines at once: nothing of either may reach the recogniser, so none reaching it while
      // both ran clears each (and nothing here is timed).
      const heard = rig.stt.heard.length;
      const calls = await Promise.all(LISTENERS.map(({ to }) => rig.dialled(model, to)));
      assert.equal(rig.stt.heard.length - heard, 0, `nothing sent to the recogniser: ${JSON.stringify(calls.map((c) => c.transcript))}`);
      for (const c of calls) {
        assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup']);
        assert.equal(c.metrics.interruptions, 0);
        assert.ok(c.transcript.length > 0, 'the greeting played');
        assert.ok(
          c.transcript.every((t: { role: string; interrupted?: boolean }) => t.role === 'agent' && !t.interrupted),
          JSON.stringify(c.transcript),
        );
      }
    });
  }
});
