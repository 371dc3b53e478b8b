// The offline speech engine behind `tts-local`: Debian's espeak-ng, run as a child process per
// request (its GPL stays at process distance: nothing of it is linked into the gateway). The text
// goes in on standard input (never as an argument: a text may start with `-`), WAV comes out on
// standard output as it is synthesized; the gateway strips the 44-byte header and streams the
// 22.05 kHz mono PCM on. Romanized Hindi is turned into Devanagari first (src/speech/transliterate.ts).
// A voice is espeak's own name (`en-us`, `hi`, `ta`...); `speed` maps onto espeak's words per
// minute (175 at 1.0); `temperature` and `instructions` mean nothing to it and are ignored.
import { spawnTool, ToolMissingError } from '../../speech/process.ts';
import { primaryLanguage } from '../../speech/languages.ts';
import { romanizedHindiToDevanagari } from '../../speech/transliterate.ts';
import { UpstreamError, type SpeakCapability, type SpeechAudio } from '../types.ts';

export const ESPEAK_SAMPLE_RATE = 22_050;
const WAV_HEADER_BYTES = 44;
const NORMAL_WPM = 175;

export interface LocalSpeakOptions {
  espeakPath?: string;
}

/** The language a voice speaks: the part of its name before any variant (`en-us` → `en`). */
function voiceLanguage(voice: string): string {
  return voice.split('-')[0]!.toLowerCase();
}

export function localSpeak(opts: LocalSpeakOptions = {}): SpeakCapability {
  const command = opts.espeakPath ?? 'espeak-ng';
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
      const wpm = Math.min(450, Math.max(80, Math.round(NORMAL_WPM * (req.speed ?? 1))));
      const run = spawnTool(command, ['-b', '1', '-v', req.voice, '-s', String(wpm), '--stdout'], { signal: abort.signal });
      run.child.stdin!.end(text, 'utf8');
      async function* chunks(): AsyncGenerator<Buffer> {
        let header = 0;
        let finished = false;
        try {
          for await (const chunk of run.child.stdout! as AsyncIterable<Buffer>) {
            const skip = Math.min(WAV_HEADER_BYTES - header, chunk.length);
            header += skip;
            if (chunk.length > skip) yield chunk.subarray(skip);
          }
          const exit = await run.exited;
          if (exit.spawnError instanceof ToolMissingError) throw new UpstreamError('config', `${route.id}: ${exit.spawnError.message}`, false);
          if (signal.aborted) throw new UpstreamError('aborted', `${route.id}: cancelled`, false);
          if (exit.spawnError || exit.code !== 0) {
            throw new UpstreamError(
              'connect',
              `${route.id}: espeak-ng failed (${exit.spawnError?.message ?? `exit ${exit.code}`}): ${run.stderr().slice(0, 200)}`,
              true,
            );
          }
          finished = true;
        } finally {
          if (!finished) run.kill();
          signal.removeEventListener('abort', onCancel);
        }
      }
      const audio: SpeechAudio = { format: 'pcm', sampleRate: ESPEAK_SAMPLE_RATE, chunks: chunks() };
      return audio;
    },
  };
}
