import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { AudioDecodeError, decodedPcmBytes, decodeToPcm, probeAudio, type AudioInput } from '../../src/speech/ffmpeg.ts';
import { spawnTool, ToolMissingError } from '../../src/speech/process.ts';
import { envelopeCorrelation, ffmpegMake, int16Of, librivoxWav, missing, referencePcm, snrDb, tempDir } from './helpers.ts';

async function collect(input: AudioInput, options = {}): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of decodeToPcm(input, options)) parts.push(chunk);
  return Buffer.concat(parts);
}

const CLIP_SECONDS = 2.99; // librivox 0880

describe('ffmpeg: probe and decode', { skip: missing('ffmpeg', 'librivox') }, () => {
  const tmp = tempDir();
  const source = librivoxWav('0880');
  // Every container the upload endpoint promises, made from the same LibriVox clip.
  const containers: { name: string; file: string; out: string[]; container: RegExp; codec: string; exact: boolean }[] = [
    { name: 'wav', file: 'a.wav', out: [], container: /^wav$/, codec: 'pcm_s16le', exact: true },
    { name: 'mp3', file: 'a.mp3', out: ['-c:a', 'libmp3lame', '-b:a', '64k'], container: /^mp3$/, codec: 'mp3', exact: false },
    { name: 'ogg/opus', file: 'a.ogg', out: ['-c:a', 'libopus', '-b:a', '32k'], container: /^ogg$/, codec: 'opus', exact: false },
    { name: 'flac', file: 'a.flac', out: ['-c:a', 'flac'], container: /^flac$/, codec: 'flac', exact: true },
    { name: 'm4a/aac (index at the end)', file: 'a.m4a', out: ['-c:a', 'aac', '-b:a', '64k'], container: /^mov,mp4,m4a/, codec: 'aac', exact: false },
    { name: 'aac (ADTS)', file: 'a.aac', out: ['-c:a', 'aac', '-b:a', '64k'], container: /^aac$/, codec: 'aac', exact: false },
    { name: 'webm/opus', file: 'a.webm', out: ['-c:a', 'libopus', '-b:a', '32k'], container: /^matroska,webm$/, codec: 'opus', exact: false },
    { name: 'μ-law wav, 8 kHz', file: 'mu.wav', out: ['-ar', '8000', '-c:a', 'pcm_mulaw'], container: /^wav$/, codec: 'pcm_mulaw', exact: false },
    { name: 'A-law wav, 8 kHz', file: 'al.wav', out: ['-ar', '8000', '-c:a', 'pcm_alaw'], container: /^wav$/, codec: 'pcm_alaw', exact: false },
  ];
  let original: Int16Array;
  // Each container's plain decode and probe, made once and read by every test that checks them (a
  // process of ffmpeg or ffprobe each): the tests below otherwise ran the same ones again.
  const decoded = new Map<string, Promise<Buffer>>();
  const probed = new Map<string, ReturnType<typeof probeAudio>>();
  const decodeOf = (file: string) => decoded.get(file) ?? decoded.set(file, collect({ path: join(tmp.dir, file) })).get(file)!;
  const probeOf = (file: string) => probed.get(file) ?? probed.set(file, probeAudio({ path: join(tmp.dir, file) })).get(file)!;

  before(async () => {
    original = referencePcm(source);
    await Promise.all(containers.map((c) => ffmpegMake(tmp.dir, c.file, ['-i', source], c.out)));
  });
  after(() => tmp.remove());

  it('counts the decoded PCM in ffmpeg itself, to the byte of the piped decode, in every container; bounded by maxSeconds', async () => {
    for (const c of containers) {
      const piped = (await decodeOf(c.file)).length;
      assert.equal(await decodedPcmBytes({ path: join(tmp.dir, c.file) }), piped, c.name);
    }
    assert.equal(await decodedPcmBytes({ path: join(tmp.dir, 'a.wav') }, { maxSeconds: 1 }), 32_000);
    writeFileSync(join(tmp.dir, 'junk.bin'), Buffer.from('not audio at all '.repeat(100)));
    await assert.rejects(decodedPcmBytes({ path: join(tmp.dir, 'junk.bin') }), AudioDecodeError);
  });

  it("a decode names the container as ffprobe does, piped or counted, in every container; an undecodable file still gives ffmpeg's error", async () => {
    for (const c of containers) {
      const path = join(tmp.dir, c.file);
      const named: string[] = [];
      const onContainer = (name: string) => named.push(name);
      const piped = await collect({ path }, { onContainer });
      assert.equal(await decodedPcmBytes({ path }, { onContainer }), piped.length, c.name);
      const { container } = await probeOf(c.file);
      assert.deepEqual(named, [container, container], c.name);
      assert.match(container, c.container);
    }
    writeFileSync(join(tmp.dir, 'junk.bin'), Buffer.from('not audio at all '.repeat(100)));
    await assert.rejects(decodedPcmBytes({ path: join(tmp.dir, 'junk.bin') }, { onContainer: () => assert.fail('no container') }), (err) => {
      assert.ok(err instanceof AudioDecodeError);
      assert.doesNotMatch(err.reason, /^\[|info/, err.reason); // the error line, without its level
      return true;
    });
  });

  for (const c of containers) {
    it(`${c.name}: probed from the bytes and decoded to 16 kHz mono PCM of the same length`, async () => {
      const info = await probeOf(c.file);
      assert.match(info.container, c.container);
      assert.equal(info.codec, c.codec);
      assert.equal(info.channels, 1);
      assert.ok(info.duration !== null && Math.abs(info.duration - CLIP_SECONDS) < 0.15, `duration ${info.duration}`);
      const pcm = await decodeOf(c.file);
      const seconds = pcm.length / 32_000;
      assert.ok(Math.abs(seconds - CLIP_SECONDS) < 0.1, `decoded ${seconds} s`);
      // The decoded samples are the clip's: bit-exact from lossless containers; from lossy ones
      // (shifted by codec delay) the same loudness over time.
      if (c.exact) assert.ok(snrDb(original, int16Of(pcm)) > 90);
      const likeness = envelopeCorrelation(original, int16Of(pcm));
      assert.ok(likeness > 0.95, `envelope correlation ${likeness.toFixed(3)}`);
    });
  }

  it('decodes bytes in memory and a piped stream the same as the file', async () => {
    const path = join(tmp.dir, 'a.flac');
    const fromFile = await collect({ path });
    const fromBytes = await collect({ bytes: readFileSync(path) });
    const fromStream = await collect({ stream: Readable.from([readFileSync(path)]) });
    assert.deepEqual(fromBytes, fromFile);
    assert.deepEqual(fromStream, fromFile);
    const info = await probeAudio({ bytes: readFileSync(join(tmp.dir, 'a.ogg')) });
    assert.equal(info.codec, 'opus');
  });

  it('goes by the bytes, not the name: mp3 named .wav is mp3; text named .mp3 is refused', async () => {
    const disguised = join(tmp.dir, 'really-mp3.wav');
    copyFileSync(join(tmp.dir, 'a.mp3'), disguised);
    assert.equal((await probeAudio({ path: disguised })).codec, 'mp3');
    const text = join(tmp.dir, 'notes.mp3');
    writeFileSync(text, 'these are not the droids you are looking for\n'.repeat(100));
    await assert.rejects(probeAudio({ path: text }), (err: unknown) => {
      assert.ok(err instanceof AudioDecodeError);
      assert.match(err.message, /^the audio could not be decoded: Invalid data found when processing input$/);
      return true;
    });
    await assert.rejects(collect({ path: text }), AudioDecodeError);
  });

  it('refuses random bytes, an empty file, a truncated header and a video with no sound, with a clear reason', async () => {
    const random = Buffer.alloc(20_000);
    for (let i = 0; i < random.length; i++) random[i] = (i * 7919 + 13) % 251;
    await assert.rejects(probeAudio({ bytes: random }), AudioDecodeError);
    await assert.rejects(collect({ bytes: random }), AudioDecodeError);
    await assert.rejects(probeAudio({ bytes: Buffer.alloc(0) }), AudioDecodeError);
    await assert.rejects(collect({ bytes: readFileSync(join(tmp.dir, 'a.wav')).subarray(0, 20) }), AudioDecodeError);
    const video = await ffmpegMake(tmp.dir, 'video.mkv', ['-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=5:duration=1'], ['-c:v', 'mpeg4']);
    await assert.rejects(probeAudio({ path: video }), /the audio could not be decoded: the file has no audio stream/);
    await assert.rejects(collect({ path: video }), AudioDecodeError);
  });

  it('never follows a playlist to another file (only audio containers are demuxed)', async () => {
    const playlist = join(tmp.dir, 'list.m3u8');
    // An HLS playlist naming a local AAC file: ffmpeg's HLS demuxer would read that file.
    writeFileSync(playlist, `#EXTM3U\n#EXT-X-TARGETDURATION:3\n#EXTINF:3.0,\n${join(tmp.dir, 'a.aac')}\n#EXT-X-ENDLIST\n`);
    await assert.rejects(probeAudio({ path: playlist }), /the audio could not be decoded: hls is not an audio container$/);
    await assert.rejects(collect({ path: playlist }), AudioDecodeError);
  });

  it('stops at maxSeconds', async () => {
    const pcm = await collect({ path: join(tmp.dir, 'a.wav') }, { maxSeconds: 1 });
    assert.equal(pcm.length, 32_000);
  });

  it('kills ffmpeg on abort, mid-stream, and rejects with the abort reason', async () => {
    const input = new PassThrough();
    const wav = readFileSync(join(tmp.dir, 'a.wav'));
    input.write(wav); // a header and some audio; the stream never ends
    const controller = new AbortController();
    const started = Date.now();
    const reason = new Error('client went away');
    setTimeout(() => controller.abort(reason), 200);
    await assert.rejects(collect({ stream: input }, { signal: controller.signal }), (err) => err === reason);
    assert.ok(Date.now() - started < 2000);
  });

  it('kills ffmpeg when the consumer stops reading early', async () => {
    const input = new PassThrough();
    // 7 s of audio: ffmpeg analyses 5 s of a piped input before its first output.
    input.write(readFileSync(librivoxWav('0870')));
    const gen = decodeToPcm({ stream: input });
    const first = await gen.next();
    assert.equal(first.done, false);
    await gen.return(undefined); // the finally block kills ffmpeg; the test would hang otherwise
    input.destroy();
  });

  it('reports a failing source stream as its own error, not as bad audio', async () => {
    const boom = new Error('upload broke');
    const source = new Readable({ read() {} });
    source.push(readFileSync(join(tmp.dir, 'a.wav')).subarray(0, 4000));
    setTimeout(() => source.destroy(boom), 50);
    await assert.rejects(collect({ stream: source }), (err) => err === boom);
  });

  it('says how to install a missing binary', async () => {
    await assert.rejects(probeAudio({ bytes: Buffer.alloc(10) }, { ffprobePath: 'no-such-ffprobe' }), (err) => {
      assert.ok(err instanceof ToolMissingError);
      assert.match(err.message, /no-such-ffprobe is not installed: run scripts\/install-debian-packages.sh/);
      return true;
    });
  });
});

describe('spawnTool', () => {
  it('keeps at most stderrLimit bytes of stderr', async () => {
    const run = spawnTool(process.execPath, ['-e', 'process.stderr.write("x".repeat(1 << 20))'], { stderrLimit: 1000 });
    const exit = await run.exited;
    assert.equal(exit.code, 0);
    assert.equal(run.stderr().length, 1000);
  });
});
