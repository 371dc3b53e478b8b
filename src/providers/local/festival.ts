// The second offline speech engine behind `tts-local`: Debian's festival with the CMU ARCTIC "slt"
// HTS voice (festvox-us-slt-hts), a far more natural US English voice than espeak-ng's, run as a
// child process per request like espeak-ng (src/speech/process.ts: no shell, killed on abort and
// with the gateway).
//
// Untrusted text never reaches festival's Scheme reader. Festival evaluates the Scheme it is given
// on its command line and, in some modes, on standard input; so the text is written to a file in a
// private folder (0700; the gateway's tmp area under DATA_DIR) and read by `tts_file` in plain text
// mode, which tokenizes it and never evaluates it; standard input is /dev/null; the driver's
// Scheme is a constant but for the voice (from the table below) and the speed (a number we format).
// `(system "touch /tmp/x")` is spoken, not run (test/synthesis/festival.test.ts).
//
// Festival's `text2wave` writes one WAV at the end; here `tts_file` synthesizes the text utterance
// by utterance and a hook writes each one's audio as soon as it is made, so the first utterance's
// audio comes while the next is synthesized. An utterance is a clause: festival ends them at `.`,
// `?`, `!`, `;` and `:`, and here at a comma too. "Hello, your account balance is two hundred rupees,
// and your next bill is due on the fifth of May." then starts in 150–180 ms instead of 490–830 ms
// (shared 2-core machine), for clause-final intonation at each comma and 0.07 s more pause per
// comma; pocketsphinx hears both alike (8.0 % / 10.7 % WER on six sentences with commas). Festival
// may print to standard output itself (a missing voice, some warnings), so every utterance is
// framed: a line `AUDIO <bytes>\n`, then that many bytes of s16 PCM at the voice's rate (festival
// writes the host's byte order: little-endian on every platform the gateway runs on). Anything
// else where a frame should start fails the stream: stray text never reaches a client as audio.
// `--heap 1000000` (Scheme cells): the default heap of 10 million makes each process ~330 MB, this
// one ~45 MB and starts in ~60 ms.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnTool, type ToolRun } from '../../speech/process.ts';

export interface FestivalVoice {
  /** Festival's own name of the voice (its `voice_<name>` function). */
  festival: string;
  /** The rate its audio is written at (festival resamples to it when the voice's own differs). */
  sampleRate: number;
}

/** tts-local's festival voices, by the name clients give (a language tag and the speaker). */
export const FESTIVAL_VOICES: Readonly<Record<string, FestivalVoice>> = {
  'en-us-slt': { festival: 'cmu_us_slt_arctic_hts', sampleRate: 32_000 },
};

export function festivalVoice(voice: string): FestivalVoice | undefined {
  return Object.hasOwn(FESTIVAL_VOICES, voice) ? FESTIVAL_VOICES[voice] : undefined;
}

/** A frame header's longest line: `AUDIO ` and up to 12 digits. */
const MAX_HEADER = 20;
const HEADER = /^AUDIO (\d{1,12})$/;

export class FestivalOutputError extends Error {
  override name = 'FestivalOutputError';
}

/** Speech rate: espeak's range (80–450 words a minute at 175 for 1.0), through the HTS engine's `-r`. */
function rate(speed: number | undefined): string {
  return Math.min(450 / 175, Math.max(80 / 175, speed ?? 1)).toFixed(3);
}

/** The Scheme festival runs: load its init with only our voice to default to, then speak `input.txt`. */
export function festivalArgs(voice: FestivalVoice, speed: number | undefined): string[] {
  const name = voice.festival;
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`not a festival voice name: ${name}`);
  const hook =
    '(lambda (utt) (utt.wave.resample utt RATE)' +
    ' (format gw_out "AUDIO %d\\n" (* 2 (cadr (assoc (quote num_samples) (wave.info (utt.wave utt))))))' +
    " (wave.save.data.fp (utt.wave utt) gw_out 'raw nil nil) (fflush gw_out))";
  return [
    '-q',
    '--batch',
    '--heap',
    '1000000',
    // A default voice list of ours alone: init.scm loads no other voice (the Indic ones fail there).
    `(define default-voice-priority-list '(${name}))`,
    '(load (path-append datadir "init.scm"))',
    // One expression: a failure anywhere stops it (festival goes on to the next argument otherwise).
    `(begin (voice_${name}) (set! hts_engine_params (cons (list "-r" ${rate(speed)}) hts_engine_params))` +
      // A comma ends an utterance too (festival ends them at . ? ! ; : only): the first audio waits for a clause, not a sentence.
      ` (set! eou_tree (list '(punc matches ".*,.*") '((1)) eou_tree))` +
      ' (set! gw_out (fopen "-" "wb"))' +
      ` (set! tts_hooks (list utt.synth ${hook.replace('RATE', String(voice.sampleRate))}))` +
      ' (tts_file "input.txt" nil))',
  ];
}

/** PCM out of festival's framed standard output, as it comes; FestivalOutputError on anything else. */
export async function* unframe(out: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let header = Buffer.alloc(0);
  let remaining = 0;
  for await (let chunk of out) {
    while (chunk.length > 0) {
      if (remaining > 0) {
        const take = Math.min(remaining, chunk.length);
        remaining -= take;
        yield chunk.subarray(0, take);
        chunk = chunk.subarray(take);
        continue;
      }
      const nl = chunk.indexOf(0x0a);
      const part = nl < 0 ? chunk : chunk.subarray(0, nl);
      header = Buffer.concat([header, part]);
      if (header.length > MAX_HEADER)
        throw new FestivalOutputError(`festival wrote something other than audio: ${JSON.stringify(header.toString('latin1').slice(0, 80))}`);
      if (nl < 0) break;
      const m = HEADER.exec(header.toString('latin1'));
      if (!m || Number(m[1]) % 2 !== 0)
        throw new FestivalOutputError(`festival wrote something other than audio: ${JSON.stringify(header.toString('latin1'))}`);
      remaining = Number(m[1]);
      header = Buffer.alloc(0);
      chunk = chunk.subarray(nl + 1);
    }
  }
  if (remaining > 0 || header.length > 0) throw new FestivalOutputError('festival stopped inside an utterance');
}

export interface FestivalRun {
  run: ToolRun;
  /** The voice's PCM, utterance by utterance. */
  pcm: AsyncIterable<Buffer>;
  /** Removes the text's folder (after the process has ended). */
  dispose(): Promise<void>;
}

/** Starts festival speaking `text` with `voice`; the text sits in a folder of its own until `dispose`. */
export async function startFestival(
  command: string,
  voice: FestivalVoice,
  text: string,
  opts: { speed?: number; tmpDir?: string; signal: AbortSignal },
): Promise<FestivalRun> {
  const dir = await mkdtemp(join(opts.tmpDir ?? tmpdir(), 'festival-'));
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    await writeFile(join(dir, 'input.txt'), text, { encoding: 'utf8', mode: 0o600 });
    const run = spawnTool(command, festivalArgs(voice, opts.speed), { stdin: 'ignore', cwd: dir, signal: opts.signal });
    return { run, pcm: unframe(run.child.stdout! as AsyncIterable<Buffer>), dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}
