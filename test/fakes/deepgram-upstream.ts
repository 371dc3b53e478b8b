// A fake Deepgram upstream on loopback, speaking its pre-recorded wire format (deepgram-js-sdk
// ListenV1Response, developers.deepgram.com):
//   POST /v1/listen?model=…&punctuate=…&utterances=…&diarize=…&language=…|detect_language=true
//     with `Authorization: Token <key>` (401 {err_code: "INVALID_AUTH", err_msg} otherwise) and
//     the audio as the body → {metadata: {request_id, duration, …}, results: {channels: [{
//     alternatives: [{transcript, confidence, words[]}], detected_language?}], utterances?}};
//     words carry integer `speaker`s when diarizing (fakeSpeech's turns: 0, 1, 0…).
//   with `callback=<url>`: answers {request_id} at once and POSTs the whole result there later,
//     `extra=key:value` pairs returned in metadata.extra (Deepgram's way to authenticate it).
// Errors are {err_code, err_msg, request_id}. An empty body, an unknown model, or a language other
// than a bare code or an English region Deepgram lists is a 400, as is `keyterm` to a model before
// Nova-3 (or more than 100 of them) and `keywords` to Nova-3. Programmable per request
// (FakeBehaviour) and per fake: `callbackDelayMs`, `failNextJob` (the next callback reports an
// error instead of results). Records the callbacks it sent.
import { randomUUID } from 'node:crypto';
import { deliverCallback, FakeServer, sendAnswer, sendJson, type CallbackSent } from './fake-server.ts';
import { fakeSpeech } from './audio.ts';

const LANGUAGE = /^([a-z]{2,3}|en-(US|GB|AU|IN|NZ))$/;

export interface DeepgramUpstream extends FakeServer {
  callbacks: CallbackSent[];
  callbackDelayMs: number;
  failNextJob: string | null;
}

export async function startDeepgramUpstream(opts: { apiKey?: string; models?: string[] } = {}): Promise<DeepgramUpstream> {
  const models = opts.models ?? ['nova-3', 'nova-2'];
  let self!: DeepgramUpstream;
  const server = await FakeServer.start(async (x) => {
    const { rec, behaviour } = x;
    const requestId = randomUUID();
    const fail = (status: number, errCode: string, errMsg: string) => sendJson(x.res, status, { err_code: errCode, err_msg: errMsg, request_id: requestId });
    if (opts.apiKey !== undefined && rec.headers.authorization !== `Token ${opts.apiKey}`) return fail(401, 'INVALID_AUTH', 'Invalid credentials.');
    if (behaviour.status)
      return fail(behaviour.status, behaviour.status >= 500 ? 'INTERNAL_SERVER_ERROR' : 'Bad Request', behaviour.message ?? `fake failure ${behaviour.status}`);
    if (rec.method !== 'POST' || rec.path !== '/v1/listen') return fail(404, 'Not Found', 'Not Found');
    const q = new URL(x.req.url ?? '', 'http://x').searchParams;
    const model = q.get('model') ?? 'base';
    const language = q.get('language');
    if (!models.includes(model)) return fail(400, 'Bad Request', 'No such model/language/tier combination found.');
    if (language !== null && !LANGUAGE.test(language)) return fail(400, 'Bad Request', `No such model/language/tier combination found (language ${language}).`);
    // Keyterm Prompting is Nova-3's; Keywords the older models' (developers.deepgram.com/docs/keyterm, /docs/keywords).
    const keyterms = q.getAll('keyterm');
    if (keyterms.length > 0 && !model.startsWith('nova-3')) return fail(400, 'Bad Request', 'Keyterm Prompting is only available with Nova-3 models.');
    if (keyterms.length > 100) return fail(400, 'Bad Request', 'Too many keyterms.');
    if (q.getAll('keywords').length > 0 && model.startsWith('nova-3')) return fail(400, 'Bad Request', 'Keywords are not supported for Nova-3; use keyterm.');
    if (rec.raw.length === 0) return fail(400, 'Bad Request', 'Bad Request: failed to process audio: corrupt or unsupported data');
    const extra = Object.fromEntries(q.getAll('extra').map((e) => [e.slice(0, e.indexOf(':')), e.slice(e.indexOf(':') + 1)]));
    const result = listenResult(rec.raw, q, requestId, model);
    const callback = q.get('callback');
    if (!callback) return sendAnswer(x, result);
    const failure = self.failNextJob;
    self.failNextJob = null;
    sendAnswer(x, { request_id: requestId });
    const body = failure
      ? { err_code: 'ASR_FAILED', err_msg: failure, metadata: { request_id: requestId, extra } }
      : { ...result, metadata: { ...result.metadata, extra } };
    setTimeout(() => void deliverCallback(self.callbacks, callback, {}, body), self.callbackDelayMs).unref();
  });
  self = Object.assign(server, { callbacks: [], callbackDelayMs: 20, failNextJob: null });
  return self;
}

function listenResult(audio: Buffer, q: URLSearchParams, requestId: string, model: string) {
  const speech = fakeSpeech(audio);
  const diarize = q.get('diarize') === 'true';
  const punctuate = q.get('punctuate') === 'true';
  const wordsOf = (turn: (typeof speech.turns)[number]) =>
    turn.words.map((w, k) => ({
      word: w.word,
      start: w.start,
      end: w.end,
      confidence: 0.98,
      punctuated_word: punctuate ? `${k === 0 ? w.word[0]!.toUpperCase() + w.word.slice(1) : w.word}${k === turn.words.length - 1 ? '.' : ''}` : w.word,
      ...(diarize ? { speaker: turn.speaker, speaker_confidence: 0.9 } : {}),
    }));
  const words = speech.turns.flatMap(wordsOf);
  const transcript = words.map((w) => w.punctuated_word).join(' ');
  return {
    metadata: {
      transaction_key: 'deprecated',
      request_id: requestId,
      sha256: 'f'.repeat(64),
      created: '2026-11-25T10:00:00.000Z',
      duration: speech.duration,
      channels: 1,
      models: [randomUUID()],
      model_info: { [model]: { name: model } },
    },
    results: {
      channels: [
        {
          alternatives: [{ transcript, confidence: 0.97, words }],
          ...(q.get('detect_language') === 'true' ? { detected_language: 'en', language_confidence: 0.99 } : {}),
        },
      ],
      ...(q.get('utterances') === 'true'
        ? {
            utterances: speech.turns.map((t) => {
              const ws = wordsOf(t);
              return {
                start: t.start,
                end: t.end,
                confidence: 0.97,
                channel: 0,
                transcript: ws.map((w) => w.punctuated_word).join(' '),
                words: ws,
                ...(diarize ? { speaker: t.speaker } : {}),
                id: randomUUID(),
              };
            }),
          }
        : {}),
    },
  };
}
