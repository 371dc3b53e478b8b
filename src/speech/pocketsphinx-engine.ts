// The engine behind `stt-local`'s offline recogniser: Debian's pocketsphinx (US English acoustic
// model, generic language model), run as one resident `pocketsphinx_batch` process per recogniser
// (pocketsphinx.ts drives it with a voice detector; the realtime socket with its own).
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
// How it streams: the PCM is appended to a file in a private temp dir; a voice detector (the
// recogniser's in pocketsphinx.ts: vad.ts, WebRTC VAD, server_vad semantics) cuts it into
// utterances; as each one closes, a line `audio <start frame> <end frame> <id>` goes down a FIFO the
// batch process reads as its control file, and it prints that utterance's words with their frames
// (`-hypseg`, read by pocketsphinx-output.ts) at once. One model load (0.4–0.7 s here, ~105 MB RSS)
// per recogniser, then each utterance is decoded while the audio keeps coming.

import { once } from 'node:events';
import { closeSync, createWriteStream, constants as fsConstants, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { PCM_SAMPLE_RATE } from './ffmpeg.ts';
import { type Bias, distinct, NBEST, nbestHypotheses } from './nbest.ts';
import { biased, readNbest } from './nbest-files.ts';
import { FRAME_SECONDS, parseHypseg, type RawWord, spokenWord, utteranceSegments } from './pocketsphinx-output.ts';
import { abortReason, spawnTool, type ToolRun } from './process.ts';
import type { TranscriptSegment } from './transcript.ts';

export const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

/** The general model's name in every set (what an utterance without a domain is decoded with). */
export const GENERAL_MODEL = 'general';

/** What an engine loads: the language models built so far (src/speech/language-models.ts), by name, and the dictionary they share. */
export interface ModelSet {
  /** Grows by one each time a domain is added: an engine of an older set lacks its models. */
  generation: number;
  /** `-lmctl`: one `<path> <name>` line per model, the general model first. */
  lmctl: string;
  /** `-dict`: the general dictionary with the domains' own words. */
  dict: string;
  names: ReadonlySet<string>;
}

const SAMPLES_PER_FRAME = PCM_SAMPLE_RATE * FRAME_SECONDS;

export class RecogniserError extends Error {
  constructor(
    message: string,
    readonly detail = '',
  ) {
    super(message);
    this.name = 'RecogniserError';
  }
}

export interface EngineOptions {
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
  /** A silence inside an utterance at least this long starts a new segment (default 0.3 s). */
  pauseSeconds?: number;
  /** How long the engine may take to load its model and open its input (default 30 s). */
  startTimeoutMs?: number;
  /** Keep the PCM file (`audioFile`) after the engine ends, until `dispose()` (the diarizer reads it). */
  keepAudio?: boolean;
  /**
   * Language models to choose from per utterance (language-models.ts): loaded beside the general
   * model, with their shared dictionary. Absent: the general model alone.
   */
  models?: ModelSet | null;
  /** A client's prompt and key terms to favour in every utterance (nbest.ts): each one's N best are written and rescored. */
  bias?: Bias | null;
  /** Write each utterance's N best even without `bias`, so a decode may bring its own (a realtime socket's session prompt). */
  nbest?: boolean;
}

/** Log lines worth showing when the engine fails (its log is otherwise all INFO lines). */
function logErrors(logPath: string): string {
  try {
    const text = readFileSync(logPath, 'utf8');
    return text
      .split('\n')
      .filter((l) => /^(FATAL|ERROR)/.test(l))
      .slice(-5)
      .join('\n');
  } catch {
    return '';
  }
}

/**
 * Opens the write ends of the FIFOs once the engine has opened their read ends, in whatever order it
 * opens them (polled: a blocking open would hold a thread of libuv's pool until then, forever if the
 * engine dies first). Null when the engine exited before opening them all.
 */
async function connect(fifos: string[], run: ToolRun, timeoutMs: number, signal?: AbortSignal): Promise<Socket[] | null> {
  let exited = false;
  void run.exited.then(() => {
    exited = true;
  });
  const deadline = Date.now() + timeoutMs;
  const fds: (number | null)[] = fifos.map(() => null);
  const give = (): void => {
    for (const fd of fds) if (fd !== null) closeSync(fd);
  };
  for (;;) {
    if (signal?.aborted || exited) give();
    if (signal?.aborted) throw abortReason(signal);
    if (exited) return null;
    for (const [i, fifo] of fifos.entries()) {
      if (fds[i] !== null) continue;
      try {
        fds[i] = openSync(fifo, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENXIO') {
          give();
          throw err;
        } // ENXIO: no reader yet
      }
    }
    if (fds.every((fd) => fd !== null)) return fds.map((fd) => new Socket({ fd: fd!, readable: false, writable: true }));
    if (Date.now() > deadline) {
      give();
      throw new RecogniserError(`pocketsphinx did not start within ${timeoutMs} ms`);
    }
    await sleep(20);
  }
}

/**
 * The engine alone: 16 kHz PCM appended as it comes, utterances decoded when the caller says where
 * they are (frames of 10 ms from the start of the audio). The realtime socket drives it with its
 * own voice detector (server VAD with the client's settings) or the client's commits; the
 * recogniser (pocketsphinx.ts) drives it with a VAD of its own.
 */
export interface UtteranceEngine {
  /** Appends PCM (whole samples; an odd byte is kept for the next call). Resolves when taken (backpressure). */
  append(pcm: Uint8Array): Promise<void>;
  /** Frames of audio appended so far. */
  readonly frames: number;
  /**
   * Decodes frames [startFrame, endFrame) as one utterance, once they are appended; resolves with
   * its segments (times in seconds from the start of the audio), in the order decodes were asked.
   * `model` names one of the engine's `models` (default: the general model).
   */
  decode(startFrame: number, endFrame: number, model?: string, bias?: Bias | null): Promise<TranscriptSegment[]>;
  /** The utterance's hypotheses as spoken words, distinct, its first best first (needs `nbest`: at most NBEST). */
  alternatives(startFrame: number, endFrame: number, model?: string): Promise<string[][]>;
  /** The models this engine can decode with (the general model's name alone without `models`). */
  readonly models: ReadonlySet<string>;
  /** No more utterances: resolves once the engine has decoded what it was given and exited. */
  end(): Promise<void>;
  /** Stops the engine; pending decodes reject. */
  abort(): void;
  /** The s16le PCM appended so far (kept after the engine exits with `keepAudio`, until `dispose()`). */
  readonly audioFile: string;
  /** Removes the engine's files (done by itself at exit, unless `keepAudio`). */
  dispose(): Promise<void>;
}

/** Starts the engine; resolves once it has loaded its model and waits for utterances. */
export async function startPocketsphinxEngine(options: EngineOptions): Promise<UtteranceEngine> {
  const modelDir = options.modelDir ?? DEFAULT_MODEL_DIR;
  const dir = await mkdtemp(join(options.tmpDir ?? tmpdir(), 'pocketsphinx-'));
  const ctl = join(dir, 'utterances.ctl');
  const logPath = join(dir, 'log');
  const audioFile = join(dir, 'audio.raw');
  let keep = options.keepAudio === true;
  const cleanup = (): Promise<void> => rm(dir, { recursive: true, force: true });
  const models = options.models ?? null;
  const names = join(dir, 'models.ctl'); // with `models`: the model of each utterance, a line per line of `ctl`
  const mkfifo = spawnTool('mkfifo', ['-m', '600', ctl, join(dir, 'hyp.fifo'), ...(models ? [names] : [])], { stdin: 'ignore' });
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
        '-ctl',
        ctl,
        '-adcin',
        'yes',
        '-cepdir',
        dir,
        '-cepext',
        '.raw',
        '-hypseg',
        '/dev/stdout',
        '-logfn',
        logPath,
        '-hmm',
        join(modelDir, 'en-us'),
        ...(models
          ? ['-lmctl', models.lmctl, '-lmname', GENERAL_MODEL, '-lmnamectl', names, '-dict', models.dict]
          : ['-lm', join(modelDir, 'en-us.lm.bin'), '-dict', join(modelDir, 'cmudict-en-us.dict')]),
        ...(options.bias || options.nbest ? ['-nbest', String(NBEST), '-nbestdir', dir, '-nbestext', '.nbest'] : []),
        // One pass, at most 3,000 HMMs a frame: 1.7× faster than the defaults, no worse (docs/speech-engines.md).
        '-fwdflat',
        'no',
        '-maxhmmpf',
        '3000',
      ],
      { stdin: 'ignore', stdout: hypWriteFd, signal: options.signal },
    );
  } finally {
    closeSync(hypWriteFd); // the child holds its own copy; the read end sees EOF when it exits
  }
  const output = new Socket({ fd: hypReadFd, readable: true, writable: false });
  // Decodes asked for and not answered yet, in order: the engine answers each utterance with one
  // line (words, or just its id and scores when it heard none).
  const pending = new Map<
    string,
    { offset: number; finish: (words: RawWord[] | null, nbest: string) => Promise<void> | void; reject: (err: unknown) => void }
  >();
  const lines = createInterface({ input: output, crlfDelay: Infinity });
  const rescoring = new Set<Promise<void>>(); // N-best files being read: before the files go
  lines.on('line', (line) => {
    const id = line.trim().split(/\s+/)[0] ?? '';
    const waiter = pending.get(id);
    if (!waiter) return;
    pending.delete(id);
    const reading = waiter.finish(parseHypseg(line, waiter.offset)?.words ?? null, join(dir, `${id}.nbest`));
    if (!reading) return;
    rescoring.add(reading);
    void reading.finally(() => rescoring.delete(reading));
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
  let chooser: Socket | null = null; // writes `names`
  try {
    const sockets = await connect(models ? [ctl, names] : [ctl], run, options.startTimeoutMs ?? 30_000, options.signal);
    if (!sockets) throw await failure();
    [control, chooser = null] = sockets as [Socket, Socket?];
  } catch (err) {
    run.kill();
    audio.destroy();
    output.destroy();
    await run.exited;
    await cleanup();
    throw err;
  }
  control.on('error', () => {}); // EPIPE when the engine dies: its exit says why
  chooser?.on('error', () => {});
  const modelNames: ReadonlySet<string> = models ? models.names : new Set([GENERAL_MODEL]);
  void run.exited.then(async () => {
    audio.destroy();
    await outputDone.catch(() => undefined);
    await Promise.all(rescoring);
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

  /** Tells the engine to decode frames [start, end) with `model`; `finish` makes the answer of its output line. */
  const ask = async <T>(
    startFrame: number,
    endFrame: number,
    model: string,
    finish: (resolve: (value: T) => void) => (words: RawWord[] | null, nbest: string) => Promise<void> | void,
  ): Promise<T> => {
    if (!modelNames.has(model)) throw new RecogniserError(`the engine has no language model '${model}'`);
    await check();
    const id = `u${utterances++}`;
    const answer = new Promise<T>((resolve, reject) => pending.set(id, { offset: startFrame * FRAME_SECONDS, finish: finish(resolve), reject }));
    await written; // the engine reads the frames from the file: they must be there before it is told
    // Both lines at once (no await between them): another decode's lines never come in between.
    const chosen = chooser ? chooser.write(`${model}\n`) : true;
    const told = control!.write(`audio ${startFrame} ${endFrame} ${id}\n`);
    if (!chosen) await once(chooser!, 'drain');
    if (!told) await once(control!, 'drain');
    return answer;
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
      written = new Promise<void>((resolve, reject) => {
        full = !audio.write(data, (err) => (err ? reject(err) : resolve()));
      }).catch(engineGone);
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
    models: modelNames,
    async decode(startFrame, endFrame, model = GENERAL_MODEL, bias = options.bias) {
      if (endFrame <= startFrame) return [];
      if (bias && !options.bias && !options.nbest) throw new RecogniserError('the engine writes no N best: a bias needs `nbest`');
      return ask<TranscriptSegment[]>(startFrame, endFrame, model, (resolve) => (words, nbest) => {
        if (!bias || !words) {
          if (options.bias || options.nbest) void rm(nbest, { force: true });
          return resolve(words ? utteranceSegments(words, options.pauseSeconds) : []);
        }
        return biased(nbest, words, bias).then((w) => resolve(utteranceSegments(w, options.pauseSeconds)));
      });
    },
    async alternatives(startFrame, endFrame, model = GENERAL_MODEL) {
      if (endFrame <= startFrame) return [];
      if (!options.bias && !options.nbest) throw new RecogniserError('the engine writes no N best: alternatives need `nbest`');
      return ask<string[][]>(startFrame, endFrame, model, (resolve) => async (words, nbest) => {
        const first = (words ?? []).map((w) => spokenWord(w.token)).filter((w): w is string => w !== null);
        resolve(distinct([first, ...nbestHypotheses(await readNbest(nbest))]));
      });
    },
    async end() {
      await check();
      if (odd) throw new RecogniserError('PCM ended mid-sample (odd byte count)');
      control!.end();
      chooser?.end();
      const [exit] = await Promise.all([run.exited, outputDone]);
      if (exit.code !== 0) throw await failure();
    },
    abort() {
      control!.destroy();
      chooser?.destroy();
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

/**
 * Appends one utterance's 16 kHz PCM, padded to whole 10 ms frames (the engine counts frames), and
 * says which frames it spans, to be decoded (engine-pool.ts, the evaluations).
 */
export async function appendUtterance(engine: UtteranceEngine, pcm: Int16Array): Promise<{ start: number; end: number }> {
  const start = engine.frames;
  const frames = Math.ceil(pcm.length / SAMPLES_PER_FRAME);
  const padded = new Int16Array(frames * SAMPLES_PER_FRAME);
  padded.set(pcm);
  await engine.append(new Uint8Array(padded.buffer));
  return { start, end: start + frames };
}
