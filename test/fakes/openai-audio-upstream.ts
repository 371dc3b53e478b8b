// The audio endpoints of the fake OpenAI upstream (served by startOpenAIUpstream), speaking
// OpenAI's wire format (openai-openapi CreateTranscriptionRequest / CreateTranslationRequest):
//   POST /v1/audio/transcriptions, POST /v1/audio/translations — multipart with `file`, `model`,
//   `language` (ISO-639-1 only), `prompt`, `temperature`, `response_format`,
//   `timestamp_granularities[]`, `chunking_strategy`, `keywords[]` (gpt-transcribe only).
// It refuses (400, OpenAI's error shape) what OpenAI refuses: a file whose extension is not an
// audio format OpenAI lists, a language that is not ISO-639-1, `verbose_json` from gpt-4o-*
// models (json only), `diarized_json` from a model that does not diarize, a prompt to a diarize
// model or one past 30 s without `chunking_strategy`, granularities without verbose_json, a
// translation by a model other than whisper-1 or with a `language`. The transcript is
// fakeSpeech's (see audio.ts): Whisper answers name the language ("hindi"); diarize answers label
// speakers A, B…; translations say "translated …".
import { audioSeconds, fakeSpeech, readForm } from './audio.ts';
import { sendAnswer, type Exchange } from './fake-server.ts';

export const OPENAI_AUDIO_PATHS = ['/v1/audio/transcriptions', '/v1/audio/translations'];

const FORMATS = ['flac', 'mp3', 'mp4', 'mpeg', 'mpga', 'm4a', 'ogg', 'wav', 'webm'];
const NAMES: Record<string, string> = { en: 'english', hi: 'hindi', ta: 'tamil', te: 'telugu', bn: 'bengali', mr: 'marathi', as: 'assamese', jw: 'javanese' };

type Fail = (status: number, message: string) => void;

export async function openaiAudio(x: Exchange, fail: Fail, models?: string[]): Promise<void> {
  const form = await readForm(x.rec.raw, x.rec.headers['content-type']);
  if (!form) return fail(400, 'Expected a multipart/form-data body.');
  const one = (name: string) => form.fields.get(name)?.[0];
  const model = one('model');
  if (!model) return fail(400, 'you must provide a model parameter');
  if (!form.file) return fail(400, "Missing required parameter: 'file'.");
  if (models && !models.includes(model)) return fail(404, `The model \`${model}\` does not exist or you do not have access to it.`);
  const ext = /\.([a-z0-9]+)$/i.exec(form.file.name)?.[1]?.toLowerCase() ?? '';
  if (!FORMATS.includes(ext)) return fail(400, `Invalid file format. Supported formats: ${JSON.stringify(FORMATS)}`);

  const translate = x.rec.path.endsWith('/translations');
  const format = one('response_format') ?? 'json';
  const language = one('language');
  const granularities = form.fields.get('timestamp_granularities[]') ?? [];
  const diarizeModel = model.includes('diarize');
  const jsonOnly = /^gpt-4o(-mini)?-transcribe/.test(model) && !diarizeModel;
  const seconds = audioSeconds(form.file.bytes);

  if (language !== undefined && (translate || !/^[a-z]{2,3}$/.test(language))) {
    return fail(
      400,
      translate
        ? 'Unrecognized request argument supplied: language'
        : `Invalid language '${language}'. Language parameter must be specified in ISO-639-1 format.`,
    );
  }
  if (translate && model !== 'whisper-1') return fail(400, `Model ${model} is not supported for translations.`);
  if (jsonOnly && format !== 'json' && format !== 'text')
    return fail(400, `response_format '${format}' is not compatible with model '${model}'. Use 'json' or 'text' instead.`);
  if (format === 'diarized_json' && !diarizeModel) return fail(400, `response_format 'diarized_json' is only supported with a diarization model.`);
  if (diarizeModel && !['json', 'text', 'diarized_json'].includes(format))
    return fail(400, `response_format '${format}' is not compatible with model '${model}'.`);
  if (diarizeModel && one('prompt') !== undefined) return fail(400, 'Prompt is not supported for diarization models.');
  if (form.fields.has('keywords[]') && !model.startsWith('gpt-transcribe')) return fail(400, 'Unrecognized request argument supplied: keywords');
  if (diarizeModel && seconds > 30 && one('chunking_strategy') === undefined)
    return fail(400, 'chunking_strategy is required for audio longer than 30 seconds.');
  if (granularities.length > 0 && format !== 'verbose_json') return fail(400, 'timestamp_granularities is only supported with response_format verbose_json.');

  const speech = fakeSpeech(form.file.bytes);
  const say = (t: string) => (translate ? `translated ${t}` : t);
  const text = speech.turns.map((t) => say(t.text)).join(' ');
  const usage = { type: 'duration', seconds: Math.ceil(speech.duration) };
  const send = (body: Record<string, unknown>) => sendAnswer(x, body);
  if (format === 'json') {
    return send(jsonOnly ? { text, usage: { type: 'tokens', input_tokens: 50, output_tokens: 10, total_tokens: 60 } } : { text, usage });
  }
  if (format === 'diarized_json') {
    const segments = speech.turns.map((t, i) => ({
      type: 'transcript.text.segment',
      id: `seg_${i}`,
      start: t.start,
      end: t.end,
      text: t.text,
      speaker: String.fromCharCode(65 + t.speaker),
    }));
    return send({ task: 'transcribe', duration: speech.duration, text, segments, usage });
  }
  if (format !== 'verbose_json') return fail(400, `The fake speaks json, verbose_json and diarized_json, not ${format}.`);
  const segments = speech.turns.map((t, id) => ({
    id,
    seek: 0,
    start: t.start,
    end: t.end,
    text: ` ${say(t.text)}`,
    tokens: [50364, 440],
    temperature: 0,
    avg_logprob: -0.25,
    compression_ratio: 1.2,
    no_speech_prob: 0.01,
  }));
  const words = speech.turns.flatMap((t) => t.words);
  send({
    task: translate ? 'translate' : 'transcribe',
    language: translate ? 'english' : (NAMES[language ?? 'en'] ?? 'english'),
    duration: speech.duration,
    text,
    ...(translate || granularities.length === 0 || granularities.includes('segment') ? { segments } : {}),
    ...(granularities.includes('word') ? { words } : {}),
    usage,
  });
}
