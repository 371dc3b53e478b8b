// A fake OpenAI-compatible speech server: POST /v1/audio/speech with OpenAI's JSON body (`model`,
// `input`, `voice`, `response_format` mp3|opus|aac|flac|wav|pcm, `speed`, `instructions`), answering
// the audio chunked as it "synthesizes" it: a 440 Hz tone of 60 ms per input character at 24 kHz
// (OpenAI's `pcm`), 100 ms a chunk; containers are that tone encoded by ffmpeg. Refuses (400, OpenAI's
// error shape) a missing input or voice and an unknown format. Faults as the FakeBehaviour says:
// `status` answers an error, `closeAfterChunks` sends the headers and that many chunks then dies
// (0: dies before the first audio byte), `chunkDelayMs` paces the chunks. The tone, its encodings
// and the chunked answer are shared with the Sarvam and ElevenLabs speech fakes.
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { g711Encode } from '../../src/speech/g711.ts';
import { samplesOf } from '../../src/speech/pcm.ts';
import { FakeServer, sendJson, type Exchange } from './fake-server.ts';

export const FAKE_PCM_RATE = 24_000;
const TYPES: Record<string, string> = { mp3: 'audio/mpeg', opus: 'audio/ogg', aac: 'audio/aac', flac: 'audio/flac', wav: 'audio/wav', pcm: 'audio/pcm' };
const ENCODERS: Record<string, string[]> = {
  mp3: ['-c:a', 'libmp3lame', '-f', 'mp3'],
  opus: ['-c:a', 'libopus', '-f', 'ogg'],
  aac: ['-c:a', 'aac', '-f', 'adts'],
  flac: ['-c:a', 'flac', '-f', 'flac'],
  wav: ['-c:a', 'pcm_s16le', '-f', 'wav'],
};

/** The fake's PCM for a text: 60 ms of a 440 Hz tone per character, at `rate` (OpenAI's 24 kHz by default). */
export function fakeSpeechPcm(input: string, rate = FAKE_PCM_RATE): Buffer {
  const samples = Math.round([...input].length * 0.06 * rate);
  const out = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) out.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  return out;
}

const encoded = new Map<string, Buffer>();

/**
 * The fake's audio for a text in a format at a rate: pcm raw, mulaw raw at 8 kHz (the G.711 table),
 * containers through ffmpeg, made once (an Ogg stream's serial number is random).
 */
export function fakeSpeechAudio(input: string, format: string, rate = FAKE_PCM_RATE): Buffer {
  if (format === 'pcm') return fakeSpeechPcm(input, rate);
  if (format === 'mulaw') return Buffer.from(g711Encode('mulaw', samplesOf(fakeSpeechPcm(input, 8000))));
  const key = `${format}\n${rate}\n${input}`;
  const found = encoded.get(key);
  if (found) return found;
  const pcm = fakeSpeechPcm(input, rate);
  const bytes = execFileSync(
    'ffmpeg',
    ['-hide_banner', '-loglevel', 'error', '-f', 's16le', '-ar', String(rate), '-ac', '1', '-i', 'pipe:0', ...ENCODERS[format]!, 'pipe:1'],
    { input: pcm },
  );
  encoded.set(key, bytes);
  return bytes;
}

/** Answers `audio` chunked, `chunkBytes` a chunk, with the behaviour's faults (closeAfterChunks, chunkDelayMs). */
export async function streamAudio(x: Exchange, audio: Buffer, contentType: string, chunkBytes: number): Promise<void> {
  const { res, behaviour: b } = x;
  res.writeHead(200, { 'content-type': contentType, 'transfer-encoding': 'chunked' });
  res.flushHeaders();
  let sent = 0;
  for (let at = 0; at < audio.length; at += chunkBytes) {
    if (b.closeAfterChunks === sent) {
      await sleep(20);
      res.destroy();
      return;
    }
    if (sent > 0 && b.chunkDelayMs) await sleep(b.chunkDelayMs);
    if (res.destroyed) return;
    res.write(audio.subarray(at, at + chunkBytes));
    sent += 1;
  }
  if (b.closeAfterChunks === sent) {
    res.destroy();
    return;
  }
  res.end();
}

export function startSpeechUpstream(): Promise<FakeServer> {
  return FakeServer.start(async (x: Exchange) => {
    const { res, rec, behaviour: b } = x;
    const fail = (status: number, message: string) => sendJson(res, status, { error: { message, type: 'invalid_request_error', param: null, code: null } });
    if (rec.path !== '/v1/audio/speech') return fail(404, 'Not found');
    if (b.status) return fail(b.status, b.message ?? 'upstream failure');
    const body = rec.body as Record<string, unknown>;
    if (typeof body?.input !== 'string' || body.input.length === 0) return fail(400, "Missing required parameter: 'input'.");
    if (typeof body.voice !== 'string') return fail(400, "Missing required parameter: 'voice'.");
    const format = (body.response_format as string | undefined) ?? 'mp3';
    if (!TYPES[format]) return fail(400, `Invalid value: '${format}'. Supported values are: 'mp3', 'opus', 'aac', 'flac', 'wav', and 'pcm'.`);
    await streamAudio(x, fakeSpeechAudio(body.input, format), TYPES[format]!, (FAKE_PCM_RATE * 2) / 10);
  });
}
