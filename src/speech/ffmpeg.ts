// Audio in any container, through ffmpeg: probe it (ffprobe) and decode it to what the engines
// take, 16 kHz mono s16le PCM, as a stream (a decode can name the container too, for a caller that
// needs no more of a probe).
//
// - The format is found from the bytes, never from a name: a file is handed to the tool as its
//   standard input (`file:/dev/stdin`, so an MP4 whose index sits at the end can still be sought),
//   bytes and streams through a pipe. Only the demuxers of audio containers are allowed
//   (FORMATS), and only the protocol that reads the input, so a playlist (HLS, concat) can never
//   make ffmpeg open another file or a URL.
// - What ffmpeg cannot decode is AudioDecodeError, with ffmpeg's own reason in the message.
// - Each call is one child process (no shell), killed when its AbortSignal fires or when the
//   consumer stops reading; its stderr is kept to a bound.

import { openSync, closeSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { abortReason, spawnTool, type ToolRun } from './process.ts';

export const PCM_SAMPLE_RATE = 16_000;
/** Bytes of 16 kHz mono s16le per second. */
export const PCM_BYTES_PER_SECOND = PCM_SAMPLE_RATE * 2;

/**
 * ffmpeg's demuxers for audio containers: wav (PCM, μ-law, A-law, RF64), mp3, ogg (Opus, Vorbis,
 * FLAC), flac, mov (m4a, mp4, 3gp), matroska (webm, mka), aac (ADTS), aiff, caf, amr, au, w64,
 * asf (wma). A name matches ffmpeg's demuxer names such as `mov,mp4,m4a,3gp,3g2,mj2`.
 */
export const FORMATS = ['wav', 'w64', 'mp3', 'ogg', 'flac', 'mov', 'matroska', 'aac', 'aiff', 'caf', 'amr', 'au', 'asf'];

export class AudioDecodeError extends Error {
  constructor(
    readonly reason: string,
    /** ffmpeg's stderr, bounded (for logs, not for clients). */
    readonly detail = '',
  ) {
    super(`the audio could not be decoded: ${reason}`);
    this.name = 'AudioDecodeError';
  }
}

/**
 * A file on disk (seekable), bytes in memory, or a stream (piped; an MP4 must have its index
 * first; destroyed if ffmpeg stops reading early, e.g. at `maxSeconds`).
 */
export type AudioInput = { path: string } | { bytes: Uint8Array } | { stream: Readable | AsyncIterable<Uint8Array> };

export interface AudioToolsOptions {
  ffmpegPath?: string;
  ffprobePath?: string;
  signal?: AbortSignal;
}

export interface AudioProbe {
  /** ffmpeg's demuxer name, e.g. `wav`, `ogg`, `mov,mp4,m4a,3gp,3g2,mj2`, `matroska,webm`. */
  container: string;
  /** The first audio stream's codec, e.g. `pcm_s16le`, `pcm_mulaw`, `opus`, `aac`. */
  codec: string;
  /** Seconds, as the container declares it (null when it does not); decoding gives the exact figure. */
  duration: number | null;
  sampleRate: number;
  channels: number;
}

const INPUT_ARGS = ['-format_whitelist', FORMATS.join(',')];

/** Starts the tool with the input attached; the returned `feed` ends once the input is written. */
function startWithInput(command: string, args: (url: string) => string[], input: AudioInput, signal?: AbortSignal) {
  if ('path' in input) {
    const fd = openSync(input.path, 'r');
    try {
      const run = spawnTool(command, ['-protocol_whitelist', 'file', ...args('file:/dev/stdin')], { stdin: fd, signal });
      return { run, feed: Promise.resolve<Error | null>(null) };
    } finally {
      closeSync(fd); // the child holds its own copy
    }
  }
  const run = spawnTool(command, ['-protocol_whitelist', 'pipe', ...args('pipe:0')], { signal });
  const stdin = run.child.stdin!;
  let feed: Promise<Error | null>;
  if ('bytes' in input) {
    stdin.end(input.bytes);
    feed = Promise.resolve(null);
  } else {
    // A failing source is the caller's error, not the audio's: report it, and stop the tool.
    let sourceFailed = false;
    const source = input.stream instanceof Readable ? input.stream : Readable.from(input.stream);
    source.once('error', () => {
      sourceFailed = true;
    });
    feed = pipeline(source, stdin).then(
      () => null,
      (err: Error) => {
        if (!sourceFailed) return null; // the tool closed its input early: its exit says why
        run.kill();
        return err;
      },
    );
  }
  return { run, feed };
}

/**
 * The reason in ffmpeg's stderr: its last line, without the `[demuxer @ 0x…]` or input-name prefix.
 * `levelled`: the log was written with `-loglevel level+info` (each line led by `[info]`,
 * `[error]`…), of which only the errors give a reason.
 */
function reasonOf(stderr: string, fallback: string, levelled = false): string {
  if (levelled)
    stderr = stderr
      .split('\n')
      .filter((l) => /^\[(error|fatal|panic)\] /.test(l))
      .map((l) => l.replace(/^\[\w+\] /, ''))
      .join('\n');
  const refused = /\[(\w+) @ [^\]]*\] Format not on whitelist/.exec(stderr);
  if (refused) return `${refused[1]} is not an audio container`;
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const last = lines.at(-1);
  if (!last) return fallback;
  return last.replace(/^\[[^\]]*\]\s*/, '').replace(/^(file:\/dev\/stdin|pipe:0):\s*/, '');
}

async function failure(run: ToolRun, feed: Promise<Error | null>, signal: AbortSignal | undefined, fallback: string, levelled = false): Promise<Error | null> {
  const [exit, feedError] = await Promise.all([run.exited, feed]);
  if (exit.spawnError) return exit.spawnError;
  if (signal?.aborted) return abortReason(signal);
  if (feedError) return feedError;
  if (exit.code === 0) return null;
  return new AudioDecodeError(reasonOf(run.stderr(), fallback, levelled), run.stderr());
}

/**
 * The log arguments of a decode: errors only, or with `onContainer` the input's description too
 * (`-loglevel level+info`), which names its container before any error.
 */
const decodeLogArgs = (options: DecodeOptions): string[] => ['-loglevel', options.onContainer ? 'level+info' : 'error'];

/** A decode that ended well tells `onContainer` the container ffmpeg's log named (`Input #0, wav, from …`). */
function reportContainer(run: ToolRun, options: DecodeOptions): void {
  if (!options.onContainer) return;
  const named = /^\[info\] Input #0, (.+), from '/m.exec(run.stderr());
  if (!named) throw new AudioDecodeError('ffmpeg did not name the container', run.stderr());
  options.onContainer(named[1]!);
}

function positive(value: unknown): number | null {
  const n = typeof value === 'string' || typeof value === 'number' ? Number(value) : NaN;
  return Number.isFinite(n) && n > 0 ? n : null;
}

interface FfprobeJson {
  streams?: { codec_name?: string; sample_rate?: string; channels?: number; duration?: string }[];
  format?: { format_name?: string; duration?: string };
}

/** What the audio is, from its bytes. Throws AudioDecodeError when ffmpeg cannot read it as audio. */
export async function probeAudio(input: AudioInput, options: AudioToolsOptions = {}): Promise<AudioProbe> {
  const { run, feed } = startWithInput(
    options.ffprobePath ?? 'ffprobe',
    (url) => ['-v', 'error', ...INPUT_ARGS, '-of', 'json', '-show_format', '-show_streams', '-select_streams', 'a:0', '-i', url],
    input,
    options.signal,
  );
  const out: Buffer[] = [];
  run.child.stdout!.on('data', (c: Buffer) => out.push(c));
  const error = await failure(run, feed, options.signal, 'not a recognised audio file');
  if (error) throw error;
  let parsed: FfprobeJson;
  try {
    parsed = JSON.parse(Buffer.concat(out).toString('utf8')) as FfprobeJson;
  } catch {
    throw new AudioDecodeError('ffprobe gave no readable description', run.stderr());
  }
  const stream = parsed.streams?.[0];
  const sampleRate = positive(stream?.sample_rate);
  const channels = positive(stream?.channels);
  if (!stream?.codec_name || sampleRate === null || channels === null) {
    throw new AudioDecodeError('the file has no audio stream');
  }
  return {
    container: parsed.format?.format_name ?? 'unknown',
    codec: stream.codec_name,
    duration: positive(stream.duration) ?? positive(parsed.format?.duration),
    sampleRate,
    channels,
  };
}

export interface DecodeOptions extends AudioToolsOptions {
  /** Decode at most this many seconds (the rest of the input is not read). */
  maxSeconds?: number;
  /** Output sample rate; 16 kHz (the engines') unless told, e.g. 8000 for telephony. */
  sampleRate?: number;
  /**
   * Called once the input is decoded, with its container as ffprobe names it (`wav`,
   * `mov,mp4,m4a,3gp,3g2,mj2`): a caller that needs no more of a probe than that starts no ffprobe.
   */
  onContainer?: (container: string) => void;
}

/**
 * The first audio stream as mono s16le PCM (16 kHz unless `sampleRate` says otherwise), in chunks of whole samples. Ends when ffmpeg
 * exits cleanly; throws AudioDecodeError when it fails, the abort reason when aborted. Stopping
 * the iteration early kills ffmpeg.
 */
export async function* decodeToPcm(input: AudioInput, options: DecodeOptions = {}): AsyncGenerator<Buffer, void, undefined> {
  const limit = options.maxSeconds !== undefined ? ['-t', String(options.maxSeconds)] : [];
  const { run, feed } = startWithInput(
    options.ffmpegPath ?? 'ffmpeg',
    (url) => [
      '-nostdin',
      '-hide_banner',
      ...decodeLogArgs(options),
      '-nostats',
      ...INPUT_ARGS,
      '-i',
      url,
      '-map',
      '0:a:0',
      '-vn',
      ...limit,
      '-ac',
      '1',
      '-ar',
      String(options.sampleRate ?? PCM_SAMPLE_RATE),
      '-c:a',
      'pcm_s16le',
      '-f',
      's16le',
      'pipe:1',
    ],
    input,
    options.signal,
  );
  let odd: Buffer | null = null; // a chunk may end mid-sample: carry the byte over
  let finished = false;
  try {
    for await (const chunk of run.child.stdout! as AsyncIterable<Buffer>) {
      let data: Buffer = odd ? Buffer.concat([odd, chunk]) : chunk;
      odd = null;
      if (data.length % 2 === 1) {
        odd = data.subarray(data.length - 1);
        data = data.subarray(0, data.length - 1);
      }
      if (data.length > 0) yield data;
    }
    const error = await failure(run, feed, options.signal, 'ffmpeg failed', options.onContainer !== undefined);
    if (error) throw error;
    finished = true;
    reportContainer(run, options);
  } finally {
    if (!finished) run.kill();
  }
}

/**
 * How many bytes of 16 kHz mono s16le the first audio stream decodes to, counted by ffmpeg itself
 * (the PCM goes to /dev/null and `-progress` reports its size): an hour's 115 MB never pass through
 * this process. Throws as decodeToPcm does.
 */
export async function decodedPcmBytes(input: AudioInput, options: DecodeOptions = {}): Promise<number> {
  const limit = options.maxSeconds !== undefined ? ['-t', String(options.maxSeconds)] : [];
  const { run, feed } = startWithInput(
    options.ffmpegPath ?? 'ffmpeg',
    (url) => [
      '-nostdin',
      '-hide_banner',
      ...decodeLogArgs(options),
      '-nostats',
      ...INPUT_ARGS,
      '-i',
      url,
      '-map',
      '0:a:0',
      '-vn',
      ...limit,
      '-ac',
      '1',
      '-ar',
      String(PCM_SAMPLE_RATE),
      '-c:a',
      'pcm_s16le',
      '-f',
      's16le',
      '-y',
      '/dev/null',
      '-progress',
      'pipe:1',
    ],
    input,
    options.signal,
  );
  let last = -1;
  let carry = '';
  run.child.stdout!.on('data', (chunk: Buffer) => {
    const text = carry + chunk.toString('latin1');
    const lines = text.split('\n');
    carry = lines.pop() ?? '';
    for (const line of lines) {
      const m = /^total_size=(\d+)$/.exec(line.trim());
      if (m) last = Number(m[1]);
    }
  });
  const error = await failure(run, feed, options.signal, 'ffmpeg failed', options.onContainer !== undefined);
  if (error) throw error;
  const m = /total_size=(\d+)/.exec(carry);
  if (m) last = Number(m[1]);
  if (last < 0) throw new AudioDecodeError('ffmpeg reported no decoded size');
  reportContainer(run, options);
  return last - (last % 2);
}

/** Seconds of audio in `bytes` of 16 kHz mono s16le. */
export function pcmSeconds(bytes: number): number {
  return bytes / PCM_BYTES_PER_SECOND;
}

/** What `encodeAudio` reads: raw PCM (mono s16le at `pcmRate`) or any audio container ffmpeg recognises. */
export type EncodeSource = { pcmRate: number } | { container: true };

export interface EncodeOptions extends AudioToolsOptions {
  /** The output's codec and muxer, e.g. `['-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3']`. */
  output: string[];
}

/**
 * Converts a stream of audio as it arrives, through one ffmpeg process reading a pipe and writing
 * a pipe: bytes come out as soon as the encoder has a frame. Throws AudioDecodeError when ffmpeg
 * fails, the abort reason when aborted; stopping the iteration early kills ffmpeg.
 */
export async function* encodeAudio(input: AsyncIterable<Uint8Array>, source: EncodeSource, options: EncodeOptions): AsyncGenerator<Buffer, void, undefined> {
  const raw = 'pcmRate' in source ? ['-f', 's16le', '-ar', String(source.pcmRate), '-ac', '1'] : [];
  const { run, feed } = startWithInput(
    options.ffmpegPath ?? 'ffmpeg',
    (url) => [
      '-nostdin',
      '-hide_banner',
      '-loglevel',
      'error',
      '-format_whitelist',
      [...FORMATS, 's16le'].join(','),
      ...raw,
      '-i',
      url,
      '-map',
      '0:a:0',
      '-vn',
      '-map_metadata',
      '-1',
      '-fflags',
      '+bitexact',
      '-flags:a',
      '+bitexact',
      ...options.output,
      'pipe:1',
    ],
    { stream: input },
    options.signal,
  );
  let finished = false;
  try {
    for await (const chunk of run.child.stdout! as AsyncIterable<Buffer>) yield chunk;
    const error = await failure(run, feed, options.signal, 'ffmpeg failed');
    if (error) throw error;
    finished = true;
  } finally {
    if (!finished) run.kill();
  }
}
