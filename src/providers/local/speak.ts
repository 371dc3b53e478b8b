// The offline speech engines behind `tts-local`, run as a child process per request (their GPL
// stays at process distance: nothing of them is linked into the gateway). Two engines, chosen by
// the voice: Debian's festival for its voices (src/providers/local/festival.ts: `en-us-slt`, a
// natural US English HTS voice, sentence by sentence), espeak-ng for every other (`en-us`, `hi`,
// `ta`...: espeak's own names). espeak-ng takes the text on standard input (never as an argument: a
// text may start with `-`) and writes WAV on standard output as it is synthesized; the gateway
// strips the 44-byte header and streams the 22.05 kHz mono PCM on. Romanized Hindi is turned into
// Devanagari first (src/speech/transliterate.ts). `speed` maps onto espeak's words per minute (175
// at 1.0) and festival's speech rate alike; `temperature` and `instructions` mean nothing to them
// and are ignored.
import { spawnTool, ToolMissingError, type ToolRun } from '../../speech/process.ts';
import { FestivalOutputError, festivalVoice, startFestival } from './festival.ts';
import { primaryLanguage } from '../../speech/languages.ts';
import { romanizedHindiToDevanagari } from '../../speech/transliterate.ts';
import { UpstreamError, type ResolvedRoute, type SpeakCapability, type SpeechAudio } from '../types.ts';
import { samplesOf } from '../../speech/pcm.ts';

export const ESPEAK_SAMPLE_RATE = 22_050;
const WAV_HEADER_BYTES = 44;
const NORMAL_WPM = 175;

export interface LocalSpeakOptions {
  espeakPath?: string;
  festivalPath?: string;
  /** Where festival's text is written (the gateway's tmp area under DATA_DIR); the OS temp dir when absent. */
  tmpDir?: string;
}

/** An engine at work: its process, its PCM as it comes, and what to clean up once it has ended. */
interface Engine {
  name: string;
  run: ToolRun;
  sampleRate: number;
  pcm: AsyncIterable<Buffer>;
  dispose?(): Promise<void>;
}

function startEspeak(command: string, voice: string, text: string, speed: number | undefined, signal: AbortSignal): Engine {
  const wpm = Math.min(450, Math.max(80, Math.round(NORMAL_WPM * (speed ?? 1))));
  const run = spawnTool(command, ['-b', '1', '-v', voice, '-s', String(wpm), '--stdout'], { signal });
  run.child.stdin!.end(text, 'utf8');
  const pcm = (async function* () {
    let header = 0;
    for await (const chunk of run.child.stdout! as AsyncIterable<Buffer>) {
      const skip = Math.min(WAV_HEADER_BYTES - header, chunk.length);
      header += skip;
      if (chunk.length > skip) yield chunk.subarray(skip);
    }
  })();
  return { name: 'espeak-ng', run, sampleRate: ESPEAK_SAMPLE_RATE, pcm };
}

/** The language a voice speaks: the part of its name before any variant (`en-us` → `en`). */
function voiceLanguage(voice: string): string {
  return voice.split('-')[0]!.toLowerCase();
}

export function localSpeak(opts: LocalSpeakOptions = {}): SpeakCapability {
  return {
    refuses(req) {
      if (req.language !== undefined && primaryLanguage(req.language) !== voiceLanguage(req.voice)) {
        return { param: 'language', message: `The offline voice '${req.voice}' does not speak '${req.language}'.` };
      }
      return undefined;
    },
    async speak(route, req, signal) {
      const abort = new AbortController();
      const onCancel = () => abort.abort(new Error('cancelled'));
      if (signal.aborted) onCancel();
      else signal.addEventListener('abort', onCancel, { once: true });
      const text = voiceLanguage(req.voice) === 'hi' ? romanizedHindiToDevanagari(req.input) : req.input;
      const festival = festivalVoice(req.voice);
      let engine: Engine;
      try {
        engine = festival
          ? {
              name: 'festival',
              sampleRate: festival.sampleRate,
              ...(await startFestival(opts.festivalPath ?? 'festival', festival, text, {
                speed: req.speed,
                signal: abort.signal,
                ...(opts.tmpDir ? { tmpDir: opts.tmpDir } : {}),
              })),
            }
          : startEspeak(opts.espeakPath ?? 'espeak-ng', req.voice, text, req.speed, abort.signal);
      } catch (err) {
        signal.removeEventListener('abort', onCancel);
        throw new UpstreamError('config', `${route.id}: the speech engine could not start (${(err as Error).message})`, false);
      }
      const { run, name } = engine;
      async function* chunks(): AsyncGenerator<Buffer> {
        let finished = false;
        try {
          let garbled: FestivalOutputError | undefined;
          try {
            yield* engine.pcm;
          } catch (err) {
            if (!(err instanceof FestivalOutputError)) throw err;
            garbled = err;
            run.kill();
          }
          const exit = await run.exited;
          if (exit.spawnError instanceof ToolMissingError) throw new UpstreamError('config', `${route.id}: ${exit.spawnError.message}`, false);
          if (signal.aborted) throw new UpstreamError('aborted', `${route.id}: cancelled`, false);
          if (garbled || exit.spawnError || exit.code !== 0) {
            const why = garbled?.message ?? exit.spawnError?.message ?? `exit ${exit.code}`;
            throw new UpstreamError('connect', `${route.id}: ${name} failed (${why}): ${run.stderr().slice(0, 200)}`, true);
          }
          finished = true;
        } finally {
          if (!finished) run.kill();
          signal.removeEventListener('abort', onCancel);
          if (engine.dispose) await run.exited.then(engine.dispose);
        }
      }
      const audio: SpeechAudio = { format: 'pcm', sampleRate: engine.sampleRate, chunks: chunks() };
      return audio;
    },
  };
}

/** `text` spoken by tts-local's `voice`, whole (the evaluations and tests): its PCM and rate, and when its first audio came (ms). */
export async function speakWhole(voice: string, text: string): Promise<{ pcm: Int16Array; rate: number; firstMs: number }> {
  const started = performance.now();
  const audio = await localSpeak().speak(
    { id: 'tts-local#0' } as ResolvedRoute,
    { input: text, voice, format: 'pcm', sampleRate: 16000 },
    new AbortController().signal,
  );
  const parts: Buffer[] = [];
  let firstMs = -1;
  for await (const c of audio.chunks) {
    if (firstMs < 0 && c.length > 0) firstMs = performance.now() - started;
    parts.push(c);
  }
  return { pcm: samplesOf(Buffer.concat(parts)), rate: audio.sampleRate!, firstMs };
}
