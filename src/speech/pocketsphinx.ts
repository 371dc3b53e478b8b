// The offline recogniser behind `stt-local`: Debian's pocketsphinx (US English acoustic model,
// generic language model), run as one resident `pocketsphinx_batch` process per recogniser.
//
// Why the CLI and not the npm binding (pocketsphinx@5.0.7): the binding needs swig, the
// libpocketsphinx headers, cmake-js and a native build at `npm ci`; the CLI needs only the Debian
// packages the speech engines need anyway (scripts/install-debian-packages.sh), and runs out of
// process (a crash or a hang kills one child, not the gateway).
//
// Why `pocketsphinx_batch` and not `pocketsphinx_continuous`: continuous normalises the cepstrum
// live, from a wideband prior, and its own voice detector decides the utterances; on telephone
// audio (8 kHz μ-law brought back to 16 kHz) that gave a word error rate of 99 % on the LibriVox
// clips ("hm" for a whole sentence), against 41 % for batch, which normalises each utterance
// whole; on wideband audio batch was better too (28 % against 37 %).
//
// How it streams: the PCM is appended to a file in a private temp dir; our voice detector
// (vad.ts: WebRTC VAD, server_vad semantics) cuts it into utterances; as each one closes, a line
// `audio <start frame> <end frame> <id>` goes down a FIFO the batch process reads as its control
// file, and it prints that utterance's words with their frames (`-hypseg`) at once. One model load
// (0.4–0.7 s here, ~105 MB RSS) per recogniser, then each utterance is decoded while the audio
// keeps coming.

import { once } from 'node:events';
import { closeSync, createWriteStream, constants as fsConstants, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { PCM_BYTES_PER_SECOND, PCM_SAMPLE_RATE } from './ffmpeg.ts';
import { samplesOf } from './pcm.ts';
import { abortReason, spawnTool, type ToolRun } from './process.ts';
import { joinSegmentTexts, type Transcript, type TranscriptSegment, type TranscriptWord } from './transcript.ts';
import type { VadEvent, VoiceDetectors } from './vad.ts';

export const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
/** pocketsphinx's frame: 10 ms, 160 samples at 16 kHz. */
const FRAME_SECONDS = 0.01;
const SAMPLES_PER_FRAME = PCM_SAMPLE_RATE * FRAME_SECONDS;

export class RecogniserError extends Error {
  constructor(message: string, readonly detail = '') {
    super(message);
    this.name = 'RecogniserError';
  }
}

export interface PocketsphinxOptions {
  /** The voice detectors (vad.ts) that cut the audio into utterances. */
  detectors: VoiceDetectors;
  binary?: string;
  /** Holds `en-us/` (acoustic model), `en-us.lm.bin` and `cmudict-en-us.dict`. */
  modelDir?: string;
  /**
   * Where the private temp dir (audio file, FIFO, log) goes: the gateway passes its own area under
   * DATA_DIR (src/shared/tmp-area.ts), so customer audio is never in the system's temp dir; the OS temp dir
   * when absent (scripts, tests).
   */
  tmpDir?: string;
  signal?: AbortSignal;
  /** Called with each segment as soon as its utterance is decoded. */
  onSegment?: (segment: TranscriptSegment) => void;
  /** A silence inside an utterance at least this long starts a new segment (default 0.3 s). */
  pauseSeconds?: number;
  /** An utterance is cut after this long even without a pause (default 30 s). */
  maxUtteranceSeconds?: number;
  /** How long the engine may take to load its model and open its input (default 30 s). */
  startTimeoutMs?: number;
  /** Keep the PCM file (`audioFile`) after the engine ends, until `dispose()` (the diarizer reads it). */
  keepAudio?: boolean;
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

// ---------------------------------------------------------------------------------------------
// Output parsing (pure)

export interface RawWord {
  token: string;
  /** Seconds from the start of the audio. */
  start: number;
  end: number;
}

/**
 * One `-hypseg` line: `<id> S <n> T <n> A <n> L <n>` then `<start frame> <acoustic> <lm> <word>`
 * per word, then the last end frame; frames count from the utterance's start, `offsetSeconds`.
 */
export function parseHypseg(line: string, offsetSeconds: number): { id: string; words: RawWord[] } | null {
  const tokens = line.trim().split(/\s+/);
  if (tokens.length < 10 || tokens[1] !== 'S' || tokens[3] !== 'T' || tokens[5] !== 'A' || tokens[7] !== 'L') return null;
  const entries = tokens.slice(9);
  const words: RawWord[] = [];
  for (let i = 0; i + 4 < entries.length; i += 4) {
    const start = Number(entries[i]);
    const next = Number(entries[i + 4]);
    if (!Number.isInteger(start) || !Number.isInteger(next)) return null;
    words.push({ token: entries[i + 3]!, start: round(offsetSeconds + start * FRAME_SECONDS), end: round(offsetSeconds + next * FRAME_SECONDS) });
  }
  return { id: tokens[0]!, words };
}

/** The spoken word of a token, or null for markers: `<s>`, `</s>`, `<sil>`, `[NOISE]`, `++…++`. */
export function spokenWord(token: string): string | null {
  if (/^<.*>$/.test(token) || /^\[.*\]$/.test(token) || /^\+\+.*\+\+$/.test(token) || token === '(NULL)') return null;
  return token.replace(/\(\d+\)$/, ''); // `and(2)`: the second pronunciation of "and"
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

/**
 * One utterance's words → its segments: markers and fillers dropped, pronunciation variants
 * folded, split where the speaker pauses at least `pauseSeconds` (a `<sil>`, a filler or a gap).
 */
export function utteranceSegments(words: readonly RawWord[], pauseSeconds = 0.3): TranscriptSegment[] {
  const segments: TranscriptSegment[] = [];
  let current: TranscriptWord[] = [];
  let lastEnd = -Infinity;
  for (const raw of words) {
    const word = spokenWord(raw.token);
    if (word === null) continue;
    if (current.length > 0 && raw.start - lastEnd >= pauseSeconds) {
      segments.push(toSegment(current));
      current = [];
    }
    current.push({ word, start: raw.start, end: raw.end });
    lastEnd = raw.end;
  }
  if (current.length > 0) segments.push(toSegment(current));
  return segments;
}

function toSegment(words: TranscriptWord[]): TranscriptSegment {
  return { start: words[0]!.start, end: words.at(-1)!.end, text: words.map((w) => w.word).join(' '), words };
}

// ---------------------------------------------------------------------------------------------
// The process

/** Log lines worth showing when the engine fails (its log is otherwise all INFO lines). */
function logErrors(logPath: string): string {
  try {
    const text = readFileSync(logPath, 'utf8');
    return text.split('\n').filter((l) => /^(FATAL|ERROR)/.test(l)).slice(-5).join('\n');
  } catch {
    return '';
  }
}

/**
 * Opens the write end of the FIFO once the engine has opened the read end (polled: a blocking open
 * would hold a thread of libuv's pool until then, forever if the engine dies first). Null when the
 * engine exited before opening it.
 */
async function connect(fifo: string, run: ToolRun, timeoutMs: number, signal?: AbortSignal): Promise<Socket | null> {
  let exited = false;
  void run.exited.then(() => { exited = true; });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (signal?.aborted) throw abortReason(signal);
    if (exited) return null;
    try {
      const fd = openSync(fifo, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK);
      return new Socket({ fd, readable: false, writable: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENXIO') throw err; // ENXIO: no reader yet
    }
    if (Date.now() > deadline) throw new RecogniserError(`pocketsphinx did not start within ${timeoutMs} ms`);
    await sleep(20);
  }
}

/**
 * The engine alone: 16 kHz PCM appended as it comes, utterances decoded when the caller says where
 * they are (frames of 10 ms from the start of the audio). The realtime socket drives it with its
 * own voice detector (server VAD with the client's settings) or the client's commits; the
 * recogniser below drives it with a VAD of its own.
 */
export interface UtteranceEngine {
  /** Appends PCM (whole samples; an odd byte is kept for the next call). Resolves when taken (backpressure). */
  append(pcm: Uint8Array): Promise<void>;
  /** Frames of audio appended so far. */
  readonly frames: number;
  /**
   * Decodes frames [startFrame, endFrame) as one utterance, once they are appended; resolves with
   * its segments (times in seconds from the start of the audio), in the order decodes were asked.
   */
  decode(startFrame: number, endFrame: number): Promise<TranscriptSegment[]>;
  /** No more utterances: resolves once the engine has decoded what it was given and exited. */
  end(): Promise<void>;
  /** Stops the engine; pending decodes reject. */
  abort(): void;
  /** The s16le PCM appended so far (kept after the engine exits with `keepAudio`, until `dispose()`). */
  readonly audioFile: string;
  /** Removes the engine's files (done by itself at exit, unless `keepAudio`). */
  dispose(): Promise<void>;
}

export type EngineOptions = Omit<PocketsphinxOptions, 'detectors' | 'onSegment' | 'maxUtteranceSeconds'>;

/** Starts the engine; resolves once it has loaded its model and waits for utterances. */
export async function startPocketsphinxEngine(options: EngineOptions): Promise<UtteranceEngine> {
  const modelDir = options.modelDir ?? DEFAULT_MODEL_DIR;
  const dir = await mkdtemp(join(options.tmpDir ?? tmpdir(), 'pocketsphinx-'));
  const ctl = join(dir, 'utterances.ctl');
  const logPath = join(dir, 'log');
  const audioFile = join(dir, 'audio.raw');
  let keep = options.keepAudio === true;
  const cleanup = (): Promise<void> => rm(dir, { recursive: true, force: true });
  const mkfifo = spawnTool('mkfifo', ['-m', '600', ctl, join(dir, 'hyp.fifo')], { stdin: 'ignore' });
  const made = await mkfifo.exited;
  if (made.code !== 0) {
    await cleanup();
    throw made.spawnError ?? new RecogniserError(`mkfifo failed: ${mkfifo.stderr().trim()}`);
  }
  const audio = createWriteStream(audioFile, { mode: 0o600 });
  // Write errors reach the write callbacks (append, decode); as an 'error' event with no listener, one
  // racing the engine's exit (ERR_STREAM_DESTROYED) would be an uncaught exception.
  audio.on('error', () => {});
  await once(audio, 'open');
  // The engine opens its output by name (`-hypseg /dev/stdout`), which fails on the socket Node
  // gives a child as stdout: its stdout is a FIFO instead, read here. Our read end is opened
  // first (non-blocking), then the write end the child inherits, so neither open waits.
  const hyp = join(dir, 'hyp.fifo');
  const hypReadFd = openSync(hyp, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  const hypWriteFd = openSync(hyp, fsConstants.O_WRONLY);
  let run: ToolRun;
  try {
    run = spawnTool(
      options.binary ?? 'pocketsphinx_batch',
      [
        '-ctl', ctl, '-adcin', 'yes', '-cepdir', dir, '-cepext', '.raw', '-hypseg', '/dev/stdout', '-logfn', logPath,
        '-hmm', join(modelDir, 'en-us'), '-lm', join(modelDir, 'en-us.lm.bin'), '-dict', join(modelDir, 'cmudict-en-us.dict'),
        // One pass, at most 3,000 HMMs a frame: 1.7× faster than the defaults, no worse (docs/speech-engines.md).
        '-fwdflat', 'no', '-maxhmmpf', '3000',
      ],
      { stdin: 'ignore', stdout: hypWriteFd, signal: options.signal },
    );
  } finally {
    closeSync(hypWriteFd); // the child holds its own copy; the read end sees EOF when it exits
  }
  const output = new Socket({ fd: hypReadFd, readable: true, writable: false });
  // Decodes asked for and not answered yet, in order: the engine answers each utterance with one
  // line (words, or just its id and scores when it heard none).
  const pending = new Map<string, { offset: number; resolve: (s: TranscriptSegment[]) => void; reject: (err: unknown) => void }>();
  const lines = createInterface({ input: output, crlfDelay: Infinity });
  lines.on('line', (line) => {
    const id = line.trim().split(/\s+/)[0] ?? '';
    const waiter = pending.get(id);
    if (!waiter) return;
    pending.delete(id);
    const parsed = parseHypseg(line, waiter.offset);
    waiter.resolve(parsed ? utteranceSegments(parsed.words, options.pauseSeconds) : []);
  });
  const outputDone = once(lines, 'close');

  const failure = async (): Promise<Error> => {
    const exit = await run.exited;
    if (exit.spawnError) return exit.spawnError;
    if (options.signal?.aborted) return abortReason(options.signal);
    const detail = logErrors(logPath) || run.stderr().trim();
    return new RecogniserError(`pocketsphinx failed (exit ${exit.code ?? exit.signal})${detail ? `: ${detail.split('\n').at(-1)}` : ''}`, detail);
  };

  let control: Socket | null;
  try {
    control = await connect(ctl, run, options.startTimeoutMs ?? 30_000, options.signal);
    if (!control) throw await failure();
  } catch (err) {
    run.kill();
    audio.destroy();
    output.destroy();
    await run.exited;
    await cleanup();
    throw err;
  }
  control.on('error', () => {}); // EPIPE when the engine dies: its exit says why
  void run.exited.then(async () => {
    audio.destroy();
    await outputDone.catch(() => undefined);
    if (pending.size > 0) {
      const err = await failure();
      for (const w of pending.values()) w.reject(err);
      pending.clear();
    }
    return keep ? undefined : cleanup();
  });
  let bytes = 0;
  let odd: Uint8Array | null = null;
  let utterances = 0;
  let written: Promise<void> = Promise.resolve(); // the last audio write, done

  // The audio file is destroyed only when the engine exits: a write cut short by that reports why
  // the engine failed, not the stream's ERR_STREAM_DESTROYED (other write errors pass as they are).
  const engineGone = async (err: unknown): Promise<never> => {
    throw (err as NodeJS.ErrnoException | null)?.code === 'ERR_STREAM_DESTROYED' ? await failure() : err;
  };

  const check = async (): Promise<void> => {
    if (control!.destroyed || run.child.exitCode !== null || run.child.signalCode !== null) throw await failure();
  };

  return {
    get frames() {
      return Math.floor(bytes / 2 / SAMPLES_PER_FRAME);
    },
    async append(pcm) {
      if (pcm.length === 0) return;
      await check();
      let data = odd ? Buffer.concat([odd, pcm]) : Buffer.from(pcm.buffer, pcm.byteOffset, pcm.length);
      odd = null;
      if (data.length % 2 === 1) {
        odd = Uint8Array.from(data.subarray(data.length - 1));
        data = data.subarray(0, data.length - 1);
      }
      if (data.length === 0) return;
      bytes += data.length;
      let full = false;
      written = new Promise<void>((resolve, reject) => { full = !audio.write(data, (err) => (err ? reject(err) : resolve())); }).catch(engineGone);
      written.catch(() => {}); // awaited where it matters; an unawaited failure must not crash
      if (full) {
        // Until the file drains, or closes because the engine exited (check() then says why). Not a
        // race against a promise of the engine's exit: each call would leave it a reaction whose
        // closure holds this call's scope, `data` included, until the engine exits (an hour's PCM).
        await new Promise<void>((resolve) => {
          const done = () => {
            audio.off('drain', done);
            audio.off('close', done);
            resolve();
          };
          audio.on('drain', done);
          audio.on('close', done);
        });
        await check();
      }
    },
    async decode(startFrame, endFrame) {
      if (endFrame <= startFrame) return [];
      await check();
      const id = `u${utterances++}`;
      const answer = new Promise<TranscriptSegment[]>((resolve, reject) => pending.set(id, { offset: startFrame * FRAME_SECONDS, resolve, reject }));
      await written; // the engine reads the frames from the file: they must be there before it is told
      if (!control!.write(`audio ${startFrame} ${endFrame} ${id}\n`)) await once(control!, 'drain');
      return answer;
    },
    async end() {
      await check();
      if (odd) throw new RecogniserError('PCM ended mid-sample (odd byte count)');
      control!.end();
      const [exit] = await Promise.all([run.exited, outputDone]);
      if (exit.code !== 0) throw await failure();
    },
    abort() {
      control!.destroy();
      run.kill();
      keep = false;
      void run.exited.then(cleanup);
    },
    audioFile,
    dispose() {
      keep = false;
      return cleanup();
    },
  };
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
export async function transcribePcmWith<T>(pcm: AsyncIterable<Uint8Array>, options: PocketsphinxOptions, use: (t: Transcript, audioFile: string) => Promise<T>): Promise<T> {
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
