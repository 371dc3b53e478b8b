import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeToPcm } from '../../src/speech/ffmpeg.ts';
import {
  parseWordLine,
  RecogniserError,
  spokenWord,
  startPocketsphinx,
  transcribePcm,
  utteranceSegments,
  utteranceSplitter,
} from '../../src/speech/pocketsphinx.ts';
import { ToolMissingError } from '../../src/speech/process.ts';
import type { TranscriptSegment } from '../../src/speech/transcript.ts';
import { wordErrorRate } from '../../src/speech/wer.ts';
import { librivoxTranscripts, librivoxWav, missing, referencePcm } from './helpers.ts';

// What `pocketsphinx_continuous -time yes` printed for 1 s silence + LibriVox 0880 on this machine.
const OUTPUT = `he was not an illness those young man
<s> 0.000 0.990 0.999200
<sil> 1.000 1.070 0.461308
<sil> 1.080 1.200 0.944399
he 1.210 1.320 0.998601
was(2) 1.330 1.540 0.999600
not 1.550 1.970 0.998501
[SPEECH] 1.980 2.100 0.535598
an(2) 2.110 2.290 0.472940
illness 2.300 2.680 0.834168
those 2.690 3.040 0.055875
young 3.050 3.320 0.050806
man 3.330 3.790 0.905008
</s> 3.800 4.090 1.000000
`;

describe('pocketsphinx output parsing', () => {
  it('reads word lines and nothing else', () => {
    assert.deepEqual(parseWordLine('was(2) 1.330 1.540 0.999600'), { token: 'was(2)', start: 1.33, end: 1.55, confidence: 0.9996 });
    assert.equal(parseWordLine('he was not an illness those young man'), null);
    assert.equal(parseWordLine('one two three'), null);
    assert.equal(parseWordLine(''), null);
  });

  it('drops markers and fillers, folds pronunciation variants', () => {
    assert.deepEqual(['<s>', '</s>', '<sil>', '[NOISE]', '[SPEECH]', '++BREATH++', '(NULL)'].map(spokenWord), [null, null, null, null, null, null, null]);
    assert.equal(spokenWord('and(2)'), 'and');
    assert.equal(spokenWord("don't"), "don't");
  });

  it('turns an utterance into segments with word times, split at pauses', () => {
    const utterances: ReturnType<typeof utteranceSegments>[] = [];
    const splitter = utteranceSplitter((words) => utterances.push(utteranceSegments(words)));
    for (const line of OUTPUT.split('\n')) splitter.line(line);
    splitter.flush();
    assert.equal(utterances.length, 1);
    const [segments] = utterances;
    assert.deepEqual(segments!.map((s) => s.text), ['he was not an illness those young man']);
    const seg = segments![0]!;
    assert.equal(seg.start, 1.21);
    assert.equal(seg.end, 3.8);
    assert.deepEqual(seg.words!.slice(0, 2), [{ word: 'he', start: 1.21, end: 1.33 }, { word: 'was', start: 1.33, end: 1.55 }]);
    assert.ok(seg.avg_logprob! < 0 && seg.avg_logprob! > -1);
    // A 0.3 s pause (the [SPEECH] filler, 1.98–2.11 plus the gap) splits; a shorter one does not.
    const split = utteranceSegments(OUTPUT.split('\n').map(parseWordLine).filter((w) => w !== null), 0.1);
    assert.deepEqual(split.map((s) => s.text), ['he was not', 'an illness those young man']);
  });
});

describe('pocketsphinx recogniser', { skip: missing('ffmpeg', 'pocketsphinx', 'librivox') }, () => {
  it('streams: transcribes silence + clip + silence + clip, each utterance as soon as it closes, with its times', async () => {
    const silence = new Int16Array(16_000);
    const parts = [silence, referencePcm(librivoxWav('0880')), silence, referencePcm(librivoxWav('0930')), silence];
    const audio = Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
    const seen: TranscriptSegment[] = [];
    let firstSegment!: () => void;
    const first = new Promise<void>((resolve) => { firstSegment = resolve; });
    const recogniser = await startPocketsphinx({ onSegment: (s) => { seen.push(s); firstSegment(); } });
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
    const transcript = await transcribePcm(decodeToPcm({ path: librivoxWav('0870') }));
    const wer = wordErrorRate([{ reference: librivoxTranscripts().get('0870')!, hypothesis: transcript.text }]);
    assert.ok(wer < 0.5, `WER ${wer}: ${transcript.text}`);
    assert.ok(Math.abs(transcript.duration - 7.1) < 0.1);
  });

  it('stops on abort: the pending call rejects with the reason', async () => {
    const controller = new AbortController();
    const recogniser = await startPocketsphinx({ signal: controller.signal });
    await recogniser.write(Buffer.alloc(32_000));
    const reason = new Error('caller hung up');
    controller.abort(reason);
    await assert.rejects(recogniser.end(), (err) => err === reason);
  });

  it('refuses a half sample, and says what failed when the model is missing or the binary is', async () => {
    const recogniser = await startPocketsphinx();
    await recogniser.write(Buffer.alloc(3));
    await assert.rejects(recogniser.end(), /odd byte count/);
    recogniser.abort();
    await assert.rejects(startPocketsphinx({ modelDir: '/nonexistent' }), (err) => {
      assert.ok(err instanceof RecogniserError);
      assert.match(err.message, /pocketsphinx failed/);
      return true;
    });
    await assert.rejects(startPocketsphinx({ binary: 'no-such-pocketsphinx' }), ToolMissingError);
  });
});
