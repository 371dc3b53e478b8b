// The offline recogniser behind `stt-local`: Debian's pocketsphinx (US English acoustic model,
// generic language model), run as the `pocketsphinx_continuous` CLI.
//
// Why the CLI and not the npm binding (pocketsphinx@5.0.7): the binding needs swig, the
// libpocketsphinx headers, cmake-js and a native build at `npm ci`; the CLI needs only the Debian
// packages the speech engines need anyway (scripts/install-debian-packages.sh), runs out of
// process (a crash or a hang kills one child, not the gateway), and streams: it reads 16 kHz
// s16le from its `-infile` as the audio arrives and prints each utterance, with word times, as
// soon as its own voice activity detector closes it (about 0.5 s of silence). It reads that input
// from a FIFO in a private temp dir, because it cannot read a socket (Node's child stdin is one).
//
// Cost per recogniser: one process (~110 MB RSS) and a model load of about 1 s before it reads.

import { once } from 'node:events';
import { constants as fsConstants, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { PCM_BYTES_PER_SECOND } from './ffmpeg.ts';
import { abortReason, spawnTool, type ToolRun } from './process.ts';
import { joinSegmentTexts, type Transcript, type TranscriptSegment, type TranscriptWord } from './transcript.ts';

export const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
/** pocketsphinx's frame: its times are frame numbers / 100, and a word's end frame is inclusive. */
const FRAME_SECONDS = 0.01;

export class RecogniserError extends Error {
  constructor(message: string, readonly detail = '') {
    super(message);
    this.name = 'RecogniserError';
  }
}

export interface PocketsphinxOptions {
  binary?: string;
  /** Holds `en-us/` (acoustic model), `en-us.lm.bin` and `cmudict-en-us.dict`. */
  modelDir?: string;
  /** Where the private temp dir (FIFO, log) goes; the OS temp dir by default. */
  tmpDir?: string;
  signal?: AbortSignal;
  /** Called with each segment as soon as the engine closes its utterance. */
  onSegment?: (segment: TranscriptSegment) => void;
  /** A silence inside an utterance at least this long starts a new segment (default 0.3 s). */
  pauseSeconds?: number;
  /** How long the engine may take to load its model and open its input (default 30 s). */
  startTimeoutMs?: number;
}

/** An engine fed 16 kHz mono s16le PCM incrementally. */
export interface Recogniser {
  /** Resolves when the engine has taken the bytes (backpressure); whole samples only. */
  write(pcm: Uint8Array): Promise<void>;
  /** No more audio: resolves with the whole transcript once the engine has finished. */
  end(): Promise<Transcript>;
  /** Stops the engine and discards its work. */
  abort(): void;
}

// ---------------------------------------------------------------------------------------------
// Output parsing (pure)

const WORD_LINE = /^(\S+) (\d+\.\d+) (\d+\.\d+) (\d+(?:\.\d+)?(?:e[-+]?\d+)?)$/;

interface RawWord {
  token: string;
  start: number;
  end: number;
  confidence: number;
}

/** Parses one `-time yes` word line (`word start end confidence`), or null for any other line. */
export function parseWordLine(line: string): RawWord | null {
  const m = WORD_LINE.exec(line.trim());
  if (!m) return null;
  return { token: m[1]!, start: Number(m[2]), end: Number(m[3]) + FRAME_SECONDS, confidence: Number(m[4]) };
}

/** The spoken word of a token, or null for markers: `<s>`, `</s>`, `<sil>`, `[NOISE]`, `++…++`. */
export function spokenWord(token: string): string | null {
  if (/^<.*>$/.test(token) || /^\[.*\]$/.test(token) || /^\+\+.*\+\+$/.test(token) || token === '(NULL)') return null;
  return token.replace(/\(\d+\)$/, ''); // `and(2)`: the second pronunciation of "and"
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

/**
 * One utterance's word lines → its segments: markers and fillers dropped, pronunciation variants
 * folded, split where the speaker pauses at least `pauseSeconds` (a `<sil>`, a filler or a gap).
 */
export function utteranceSegments(words: readonly RawWord[], pauseSeconds = 0.3): TranscriptSegment[] {
  const segments: TranscriptSegment[] = [];
  let current: { words: TranscriptWord[]; logprob: number } | null = null;
  let lastEnd = -Infinity;
  for (const raw of words) {
    const word = spokenWord(raw.token);
    if (word === null) continue;
    if (current && raw.start - lastEnd >= pauseSeconds) {
      segments.push(toSegment(current.words, current.logprob));
      current = null;
    }
    current ??= { words: [], logprob: 0 };
    current.words.push({ word, start: round(raw.start), end: round(raw.end) });
    current.logprob += Math.log(Math.max(raw.confidence, 1e-10));
    lastEnd = raw.end;
  }
  if (current) segments.push(toSegment(current.words, current.logprob));
  return segments;
}

function toSegment(words: TranscriptWord[], logprob: number): TranscriptSegment {
  return {
    start: words[0]!.start,
    end: words.at(-1)!.end,
    text: words.map((w) => w.word).join(' '),
    words,
    avg_logprob: round(logprob / words.length),
  };
}

/**
 * Feeds lines of `pocketsphinx_continuous -time yes` output and calls `onUtterance` with each
 * utterance's word lines. An utterance's words run from `<s>` to `</s>`; the hypothesis line
 * before them repeats the words and is skipped.
 */
export function utteranceSplitter(onUtterance: (words: RawWord[]) => void): { line(text: string): void; flush(): void } {
  let words: RawWord[] = [];
  const flush = (): void => {
    if (words.length > 0) onUtterance(words);
    words = [];
  };
  return {
    line(text) {
      const word = parseWordLine(text);
      if (!word) return;
      if (word.token === '<s>') flush();
      words.push(word);
      if (word.token === '</s>') flush();
    },
    flush,
  };
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

/** Starts a recogniser; resolves once the engine has loaded its model and reads its input. */
export async function startPocketsphinx(options: PocketsphinxOptions = {}): Promise<Recogniser> {
  const modelDir = options.modelDir ?? DEFAULT_MODEL_DIR;
  const dir = await mkdtemp(join(options.tmpDir ?? tmpdir(), 'pocketsphinx-'));
  const fifo = join(dir, 'audio.raw');
  const logPath = join(dir, 'log');
  const cleanup = (): Promise<void> => rm(dir, { recursive: true, force: true });
  const mkfifo = spawnTool('mkfifo', ['-m', '600', fifo], { stdin: 'ignore' });
  const made = await mkfifo.exited;
  if (made.code !== 0) {
    await cleanup();
    throw made.spawnError ?? new RecogniserError(`mkfifo failed: ${mkfifo.stderr().trim()}`);
  }

  const binary = options.binary ?? 'pocketsphinx_continuous';
  const run = spawnTool(
    binary,
    [
      '-infile', fifo, '-time', 'yes', '-logfn', logPath,
      '-hmm', join(modelDir, 'en-us'), '-lm', join(modelDir, 'en-us.lm.bin'), '-dict', join(modelDir, 'cmudict-en-us.dict'),
    ],
    { stdin: 'ignore', signal: options.signal },
  );
  const segments: TranscriptSegment[] = [];
  const splitter = utteranceSplitter((words) => {
    for (const segment of utteranceSegments(words, options.pauseSeconds)) {
      segments.push(segment);
      options.onSegment?.(segment);
    }
  });
  const lines = createInterface({ input: run.child.stdout!, crlfDelay: Infinity });
  lines.on('line', (line) => splitter.line(line));
  const outputDone = once(lines, 'close');

  const failure = async (): Promise<Error> => {
    const exit = await run.exited;
    if (exit.spawnError) return exit.spawnError;
    if (options.signal?.aborted) return abortReason(options.signal);
    const detail = logErrors(logPath) || run.stderr().trim();
    return new RecogniserError(`pocketsphinx failed (exit ${exit.code ?? exit.signal})${detail ? `: ${detail.split('\n').at(-1)}` : ''}`, detail);
  };

  let socket: Socket | null;
  try {
    socket = await connect(fifo, run, options.startTimeoutMs ?? 30_000, options.signal);
    if (!socket) throw await failure();
  } catch (err) {
    run.kill();
    await run.exited;
    await cleanup();
    throw err;
  }
  socket.on('error', () => {}); // EPIPE when the engine dies: its exit says why
  void run.exited.then(cleanup);

  let bytes = 0;
  let odd = false;
  return {
    async write(pcm) {
      if (pcm.length === 0) return;
      if (socket.destroyed || run.child.exitCode !== null) throw await failure();
      bytes += pcm.length;
      odd = bytes % 2 === 1;
      if (!socket.write(pcm)) {
        await Promise.race([once(socket, 'drain'), run.exited.then(async () => Promise.reject(await failure()))]);
      }
    },
    async end() {
      if (odd) throw new RecogniserError('PCM ended mid-sample (odd byte count)');
      socket.end();
      const [exit] = await Promise.all([run.exited, outputDone]);
      if (exit.code !== 0) throw await failure();
      splitter.flush();
      return { text: joinSegmentTexts(segments), language: 'en', duration: round(bytes / PCM_BYTES_PER_SECOND), segments };
    },
    abort() {
      socket.destroy();
      run.kill();
    },
  };
}

/** Transcribes a whole stream of 16 kHz mono s16le PCM (e.g. from ffmpeg.ts's decodeToPcm). */
export async function transcribePcm(pcm: AsyncIterable<Uint8Array>, options: PocketsphinxOptions = {}): Promise<Transcript> {
  const recogniser = await startPocketsphinx(options);
  try {
    for await (const chunk of pcm) await recogniser.write(chunk);
    return await recogniser.end();
  } catch (err) {
    recogniser.abort();
    throw err;
  }
}
