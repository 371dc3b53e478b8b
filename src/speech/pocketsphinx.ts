// The offline recogniser behind `stt-local`: the pocketsphinx engine (pocketsphinx-engine.ts: one
// resident `pocketsphinx_batch` process, and why that and not the npm binding or
// `pocketsphinx_continuous`) fed the PCM as it comes, with our voice detector (vad.ts: WebRTC VAD,
// server_vad semantics) cutting it into utterances: as each one closes the engine decodes it while
// the audio keeps coming, and its segments are reported at once. Also a whole stream to one
// transcript (transcribePcm), as the local transcription provider and the scripts use it.
import { PCM_BYTES_PER_SECOND, PCM_SAMPLE_RATE } from './ffmpeg.ts';
import { samplesOf } from './pcm.ts';
import { startPocketsphinxEngine, type EngineOptions } from './pocketsphinx-engine.ts';
import { FRAME_SECONDS } from './pocketsphinx-output.ts';
import { joinSegmentTexts, type Transcript, type TranscriptSegment } from './transcript.ts';
import type { VadEvent, VoiceDetectors } from './vad.ts';

const round = (x: number): number => Math.round(x * 1000) / 1000;

export interface PocketsphinxOptions extends EngineOptions {
  /** The voice detectors (vad.ts) that cut the audio into utterances. */
  detectors: VoiceDetectors;
  /** Called with each segment as soon as its utterance is decoded. */
  onSegment?: (segment: TranscriptSegment) => void;
  /** An utterance is cut after this long even without a pause (default 30 s). */
  maxUtteranceSeconds?: number;
}

/** An engine fed 16 kHz mono s16le PCM incrementally. */
export interface Recogniser {
  /** Resolves when the bytes are taken (backpressure); whole samples only. */
  write(pcm: Uint8Array): Promise<void>;
  /** No more audio: resolves with the whole transcript once the engine has finished. */
  end(): Promise<Transcript>;
  /** Stops the engine and discards its work. */
  abort(): void;
  /** The s16le PCM written so far (kept after `end()` with `keepAudio`). */
  readonly audioFile: string;
  /** Removes the engine's files (done by itself at exit, unless `keepAudio`). */
  dispose(): Promise<void>;
}

/** Starts a recogniser; resolves once the engine has loaded its model and waits for utterances. */
export async function startPocketsphinx(options: PocketsphinxOptions): Promise<Recogniser> {
  const engine = await startPocketsphinxEngine(options);
  const vad = options.detectors.create({ sampleRate: PCM_SAMPLE_RATE, prefix_padding_ms: 300, silence_duration_ms: 500 });
  const maxFrames = Math.round((options.maxUtteranceSeconds ?? 30) / FRAME_SECONDS);
  const segments: TranscriptSegment[] = [];
  const decodes: Promise<void>[] = [];
  let utteranceStart: number | null = null; // frames
  let ended = false;
  const release = () => {
    if (ended) return;
    ended = true;
    vad.destroy();
  };

  // Utterances are answered in the order they were asked; each segment is reported as it comes.
  let chain = Promise.resolve();
  const decodeUtterance = async (startFrame: number, endFrame: number): Promise<void> => {
    const answer = engine.decode(startFrame, endFrame);
    answer.catch(() => {});
    chain = chain.then(async () => {
      for (const segment of await answer) {
        segments.push(segment);
        options.onSegment?.(segment);
      }
    });
    chain.catch(() => {});
    decodes.push(chain);
  };

  const takeEvents = async (events: VadEvent[], frameNow: number): Promise<void> => {
    for (const event of events) {
      if (event.type === 'speech_started') utteranceStart = Math.floor(event.audio_start_ms / 10);
      else if (utteranceStart !== null) {
        await decodeUtterance(utteranceStart, Math.min(Math.ceil(event.audio_end_ms / 10), frameNow));
        utteranceStart = null;
      }
    }
    if (utteranceStart !== null && frameNow - utteranceStart >= maxFrames) {
      await decodeUtterance(utteranceStart, frameNow);
      utteranceStart = frameNow; // speech goes on: the next utterance starts here
    }
  };

  let bytes = 0;
  let carry: Uint8Array | null = null; // the VAD takes whole samples: an odd byte waits for the next write
  return {
    async write(pcm) {
      if (pcm.length === 0) return;
      await engine.append(pcm);
      bytes += pcm.length;
      let data = carry ? Buffer.concat([carry, pcm]) : Buffer.from(pcm.buffer, pcm.byteOffset, pcm.length);
      carry = null;
      if (data.length % 2 === 1) {
        carry = Uint8Array.from(data.subarray(data.length - 1));
        data = data.subarray(0, data.length - 1);
      }
      if (data.length > 0) await takeEvents(vad.push(samplesOf(data)), engine.frames);
    },
    async end() {
      try {
        await takeEvents(vad.flush(), engine.frames);
        await Promise.all(decodes);
        await engine.end();
        return { text: joinSegmentTexts(segments), language: 'en', duration: round(bytes / PCM_BYTES_PER_SECOND), segments };
      } finally {
        release();
      }
    },
    abort() {
      engine.abort();
      release();
    },
    audioFile: engine.audioFile,
    dispose: () => engine.dispose(),
  };
}

/** Transcribes a whole stream of 16 kHz mono s16le PCM (e.g. from ffmpeg.ts's decodeToPcm). */
export async function transcribePcm(pcm: AsyncIterable<Uint8Array>, options: PocketsphinxOptions): Promise<Transcript> {
  return transcribePcmWith(pcm, options, async (t) => t);
}

/**
 * transcribePcm, then `use(transcript, audioFile)` with the PCM still on disk (the diarizer reads it
 * from there, a segment at a time: nothing of the recording is kept in memory); removed after.
 */
export async function transcribePcmWith<T>(
  pcm: AsyncIterable<Uint8Array>,
  options: PocketsphinxOptions,
  use: (t: Transcript, audioFile: string) => Promise<T>,
): Promise<T> {
  const recogniser = await startPocketsphinx({ ...options, keepAudio: true });
  try {
    let t: Transcript;
    try {
      for await (const chunk of pcm) await recogniser.write(chunk);
      t = await recogniser.end();
    } catch (err) {
      recogniser.abort();
      throw err;
    }
    return await use(t, recogniser.audioFile);
  } finally {
    await recogniser.dispose();
  }
}
