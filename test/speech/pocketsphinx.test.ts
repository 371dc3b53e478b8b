import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { decodeToPcm } from '../../src/speech/ffmpeg.ts';
import { startPocketsphinx, transcribePcm } from '../../src/speech/pocketsphinx.ts';
import { RecogniserError } from '../../src/speech/pocketsphinx-engine.ts';
import { parseHypseg, spokenWord, utteranceSegments } from '../../src/speech/pocketsphinx-output.ts';
import { ToolMissingError } from '../../src/speech/process.ts';
import type { TranscriptSegment } from '../../src/speech/transcript.ts';
import { loadVoiceDetectors, type VoiceDetectors } from '../../src/speech/vad.ts';
import { wordErrorRate } from '../../src/speech/wer.ts';
import { librivoxTranscripts, librivoxWav, missing, referencePcm } from './helpers.ts';

// What `pocketsphinx_batch -hypseg` printed for 1 s silence + LibriVox 0880, frames 100–410.
const HYPSEG =
  'u1 S 0 T -8980255 A -7928832 L -1051423 0 -180224 0 <s> 7 -234496 -524288 <sil> 21 -254976 -341 he ' +
  '34 -307200 -137 was(2) 55 -1098752 -261 not 106 -367616 -524288 <sil> 113 -1459200 -512 until ' +
  '148 -926720 -280 this 167 -985088 -379 blows 205 -965632 -628 young 233 -574464 -201 man 274 -574464 -108 </s> 311';

describe('pocketsphinx output parsing', () => {
  it('reads a -hypseg line: words with times from the utterance start, the next word ending each', () => {
    const parsed = parseHypseg(HYPSEG, 1.0)!;
    assert.equal(parsed.id, 'u1');
    assert.deepEqual(parsed.words.slice(0, 4), [
      { token: '<s>', start: 1, end: 1.07 },
      { token: '<sil>', start: 1.07, end: 1.21 },
      { token: 'he', start: 1.21, end: 1.34 },
      { token: 'was(2)', start: 1.34, end: 1.55 },
    ]);
    assert.deepEqual(parsed.words.at(-1), { token: '</s>', start: 3.74, end: 4.11 });
    assert.equal(parseHypseg('he was not an illness those young man', 0), null);
    assert.equal(parseHypseg('', 0), null);
  });

  it('drops markers and fillers, folds pronunciation variants', () => {
    assert.deepEqual(['<s>', '</s>', '<sil>', '[NOISE]', '[SPEECH]', '++BREATH++', '(NULL)'].map(spokenWord), [null, null, null, null, null, null, null]);
    assert.equal(spokenWord('and(2)'), 'and');
    assert.equal(spokenWord("don't"), "don't");
  });

  it('turns an utterance into segments with word times, split at pauses', () => {
    const words = parseHypseg(HYPSEG, 1.0)!.words;
    const [seg, ...rest] = utteranceSegments(words);
    assert.equal(rest.length, 0);
    assert.equal(seg!.text, 'he was not until this blows young man');
    assert.equal(seg!.start, 1.21);
    assert.equal(seg!.end, 3.74);
    assert.deepEqual(seg!.words!.slice(0, 2), [
      { word: 'he', start: 1.21, end: 1.34 },
      { word: 'was', start: 1.34, end: 1.55 },
    ]);
    // The <sil> at 2.06–2.13 is a 0.07 s pause: a 0.05 s threshold splits there.
    assert.deepEqual(
      utteranceSegments(words, 0.05).map((s) => s.text),
      ['he was not', 'until this blows young man'],
    );
  });
});

describe('pocketsphinx recogniser', { skip: missing('ffmpeg', 'pocketsphinx', 'librivox') }, () => {
  let detectors: VoiceDetectors;
  before(async () => {
    detectors = await loadVoiceDetectors();
  });

  it('streams: transcribes silence + clip + silence + clip, each utterance as soon as it closes, with its times', async () => {
    const silence = new Int16Array(16_000);
    const parts = [silence, referencePcm(librivoxWav('0880')), silence, referencePcm(librivoxWav('0930')), silence];
    const audio = Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
    const seen: TranscriptSegment[] = [];
    let firstSegment!: () => void;
    const first = new Promise<void>((resolve) => {
      firstSegment = resolve;
    });
    const recogniser = await startPocketsphinx({
      detectors,
      onSegment: (s) => {
        seen.push(s);
        firstSegment();
      },
    });
    for (let at = 0; at < audio.length; at += 3200) await recogniser.write(audio.subarray(at, at + 3200));
    // The first utterance arrives while the input is still open: the engine can be fed live audio.
    await first;
    const transcript = await recogniser.end();
    assert.equal(transcript.language, 'en');
    assert.equal(transcript.duration, 9.28);
    assert.deepEqual(seen, transcript.segments);
    const refs = librivoxTranscripts();
    const [a, b] = [transcript.segments.filter((s) => s.end < 4.6), transcript.segments.filter((s) => s.start > 4.6)];
    assert.ok(a.length > 0 && b.length > 0, JSON.stringify(transcript.segments));
    // Speech is at 1.0–4.0 s and 5.0–8.3 s.
    assert.ok(Math.abs(a[0]!.start - 1.0) < 0.4 && Math.abs(a.at(-1)!.end - 4.0) < 0.4, `first utterance ${a[0]!.start}–${a.at(-1)!.end}`);
    assert.ok(Math.abs(b[0]!.start - 5.0) < 0.4 && Math.abs(b.at(-1)!.end - 8.3) < 0.4, `second utterance ${b[0]!.start}–${b.at(-1)!.end}`);
    const wer = wordErrorRate([
      { reference: refs.get('0880')!, hypothesis: a.map((s) => s.text).join(' ') },
      { reference: refs.get('0930')!, hypothesis: b.map((s) => s.text).join(' ') },
    ]);
    assert.ok(wer < 0.4, `WER ${wer}`);
    assert.equal(transcript.text, transcript.segments.map((s) => s.text).join(' '));
    for (const s of transcript.segments) {
      assert.doesNotMatch(s.text, /<|\[|\(\d\)/);
      const words = s.words!;
      assert.equal(s.text, words.map((w) => w.word).join(' '));
      for (let i = 1; i < words.length; i++) assert.ok(words[i]!.start >= words[i - 1]!.end - 1e-9);
    }
  });

  it('transcribes a file end to end: ffmpeg decodes, the engine recognises', async () => {
    const transcript = await transcribePcm(decodeToPcm({ path: librivoxWav('0870') }), { detectors });
    const wer = wordErrorRate([{ reference: librivoxTranscripts().get('0870')!, hypothesis: transcript.text }]);
    assert.ok(wer < 0.5, `WER ${wer}: ${transcript.text}`);
    assert.ok(Math.abs(transcript.duration - 7.1) < 0.1);
  });

  it('silence gives an empty transcript that still says how long the audio was', async () => {
    const recogniser = await startPocketsphinx({ detectors });
    await recogniser.write(Buffer.alloc(64_000));
    assert.deepEqual(await recogniser.end(), { text: '', language: 'en', duration: 2, segments: [] });
  });

  it('stops on abort: the pending call rejects with the reason', async () => {
    const controller = new AbortController();
    const recogniser = await startPocketsphinx({ detectors, signal: controller.signal });
    await recogniser.write(Buffer.alloc(32_000));
    const reason = new Error('caller hung up');
    controller.abort(reason);
    await assert.rejects(recogniser.end(), (err) => err === reason);
  });

  it('refuses a half sample, and says what failed when the model is missing or the binary is', async () => {
    const recogniser = await startPocketsphinx({ detectors });
    await recogniser.write(Buffer.alloc(3));
    await assert.rejects(recogniser.end(), /odd byte count/);
    recogniser.abort();
    const withoutModel = async (): Promise<unknown> => {
      const r = await startPocketsphinx({ detectors, modelDir: '/nonexistent' });
      await r.write(Buffer.alloc(32_000));
      return r.end();
    };
    await assert.rejects(withoutModel(), (err) => {
      assert.ok(err instanceof RecogniserError);
      assert.match(err.message, /pocketsphinx failed/);
      return true;
    });
    await assert.rejects(startPocketsphinx({ detectors, binary: 'no-such-pocketsphinx' }), ToolMissingError);
  });
});
