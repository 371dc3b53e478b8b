// Exotel's Voicebot protocol (the `exotel` carrier's bidirectional stream): snake_case JSON frames,
// base64 audio: PCM16 little-endian at 8 kHz by default; 16 or 24 kHz when the stream URL asks for
// it (`?sample-rate=`), μ-law 8 kHz when the account's applet is set so. The `start` frame says which
// in its `media_format`, and the gateway takes the stream as it says (`forFormat`): the callee's
// audio decoded and resampled to the gateway's 8 kHz, the replies sent at the stream's rate and in
// its encoding. A format it cannot take (another encoding, another rate) is refused by name
// (src/voice/media.ts ends the call `media_format_unsupported`), never misread as 8 kHz PCM16.
//   carrier → gateway: connected, start {stream_sid, call_sid, custom_parameters, media_format
//                      {encoding: "audio/x-raw", sample_rate: "8000", bit_rate: "16"}}, media (~100 ms
//                      chunks), dtmf {digit, duration}, mark {name}, stop
//   gateway → carrier: media {payload} in multiples of 320 bytes and at least 3,200 a message
//                      (200 ms of 8 kHz PCM16, 100 ms at 16 kHz: the least whatever the rate), mark, clear
// custom_parameters are the query parameters of the stream URL (Exotel: up to 3, 256 characters in
// all): the call id and its one-time token travel there (src/providers/exotel/voice.ts).
import type { SpeechClip } from '../../speech/clip.ts';
import { g711Decode, g711Encode } from '../../speech/g711.ts';
import { bytesOf, samplesOf } from '../../speech/pcm.ts';
import type { Resamplers } from '../../speech/resample.ts';
import { frameParser, type CalleeWire, type MediaWire, type StreamFormat, type WireProtocol } from './types.ts';

/** The least Exotel plays in one outbound message, whatever the rate; payloads are multiples of PAYLOAD_UNIT. */
const MIN_MESSAGE_BYTES = 3200;
const PAYLOAD_UNIT = 320;
/** Exotel's inbound chunk (and the simulated callee's). */
const INBOUND_CHUNK_MS = 100;
/** 32 KB of base64 is 24 KB of audio: 0.5 s at 24 kHz PCM16, 1.5 s at 8 kHz; Exotel sends 100 ms chunks. */
const MAX_PAYLOAD_CHARS = 32_768;

type Format = Extract<StreamFormat, { rate: number }>;
const DEFAULT: Format = { encoding: 'pcm16', rate: 8000 };
const PCM16_TYPES = new Set(['audio/x-raw', 'audio/l16', 'audio/x-l16', 'audio/pcm']);
const MULAW_TYPES = new Set(['audio/x-mulaw', 'audio/mulaw', 'audio/pcmu', 'audio/basic']);

const field = (o: unknown, name: string): unknown => (o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[name] : undefined);

/**
 * The stream's format from its start's `media_format`: `encoding` (`audio/x-raw`: PCM16 LE; a
 * `;rate=` parameter is read too) at `sample_rate` 8000, 16000 or 24000 (`bit_rate` 16), or
 * `audio/x-mulaw` at 8000. No media_format: Exotel's default for the Voicebot, 8 kHz PCM16.
 */
export function exotelFormatOf(start: unknown): StreamFormat {
  const media = field(start, 'media_format');
  if (media === undefined || media === null) return DEFAULT;
  const declared = field(media, 'encoding');
  const [type = '', ...params] = (typeof declared === 'string' ? declared : 'audio/x-raw')
    .toLowerCase()
    .split(';')
    .map((s) => s.trim());
  const rateParam = params.find((p) => p.startsWith('rate='))?.slice(5);
  const rateGiven = field(media, 'sample_rate') ?? rateParam ?? '8000';
  const rate = typeof rateGiven === 'number' || typeof rateGiven === 'string' ? Number(rateGiven) : Number.NaN;
  const bits = field(media, 'bit_rate');
  const named = `${String(declared ?? 'audio/x-raw').slice(0, 40)} at ${String(rateGiven).slice(0, 12)} Hz`;
  if (PCM16_TYPES.has(type)) {
    if (bits !== undefined && String(bits) !== '16') return { unsupported: `${named}, ${String(bits).slice(0, 8)} bits` };
    return rate === 8000 || rate === 16000 || rate === 24000 ? { encoding: 'pcm16', rate } : { unsupported: named };
  }
  if (MULAW_TYPES.has(type)) return rate === 8000 ? { encoding: 'mulaw', rate } : { unsupported: named };
  return { unsupported: named };
}

/** Bytes of one ms of audio in `format`. */
const bytesPerMs = (format: Format): number => ((format.encoding === 'pcm16' ? 2 : 1) * format.rate) / 1000;

/** 8 kHz samples at `format.rate` (the whole clip at once: its length exact), or as they are at 8 kHz. */
function upsampled(samples: Int16Array, rate: number, resamplers: Resamplers | null): Int16Array {
  if (rate === 8000) return samples;
  if (!resamplers) throw new Error(`a ${rate} Hz stream needs the resamplers`);
  const up = resamplers.create({ from: 8000, to: rate });
  try {
    const head = up.process(samples);
    const tail = up.flush();
    const out = new Int16Array(head.length + tail.length);
    out.set(head);
    out.set(tail, head.length);
    return out;
  } finally {
    up.destroy();
  }
}

/** A clip (8 kHz PCM16) in `format`'s encoding and rate. */
function encoded(clip: SpeechClip, format: Format, resamplers: Resamplers | null): Buffer {
  if (format.rate === 8000) return clip.as(format.encoding);
  const samples = upsampled(samplesOf(clip.pcm16), format.rate, resamplers);
  return format.encoding === 'pcm16' ? Buffer.from(bytesOf(samples)) : Buffer.from(g711Encode('mulaw', samples));
}

/** The gateway's end of a stream in `format` (Exotel's default when no resamplers are needed). */
function gatewayWire(format: Format, resamplers: Resamplers | null): MediaWire {
  const perMs = bytesPerMs(format);
  // ~100 ms a message, but never under Exotel's least (3,200 bytes: 200 ms at 8 kHz PCM16, 400 ms of μ-law).
  const chunkBytes = Math.max(MIN_MESSAGE_BYTES, Math.ceil((perMs * 100) / PAYLOAD_UNIT) * PAYLOAD_UNIT);
  // The callee's audio down to the gateway's 8 kHz, one resampler a stream (its filter runs across chunks).
  const down = format.rate === 8000 || !resamplers ? null : resamplers.create({ from: format.rate, to: 8000 });
  const decode = (bytes: Buffer): Int16Array | null => {
    const samples = format.encoding === 'mulaw' ? g711Decode('mulaw', bytes) : bytes.length % 2 === 0 ? samplesOf(bytes) : null;
    return samples && down ? down.process(samples) : samples;
  };
  const silence = format.encoding === 'pcm16' ? 0 : 0xff;
  const wire: MediaWire = {
    audio: format.encoding,
    chunkBytes,
    chunkMs: chunkBytes / perMs,
    parse: frameParser({ streamSid: 'stream_sid', parameters: 'custom_parameters' }, { maxChars: MAX_PAYLOAD_CHARS, decode }, exotelFormatOf),
    // A reply's last chunk is padded with silence to a whole message: Exotel plays nothing shorter.
    media: (streamSid, chunk) => ({ event: 'media', stream_sid: streamSid, media: { payload: padded(chunk, silence).toString('base64') } }),
    mark: (streamSid, name) => ({ event: 'mark', stream_sid: streamSid, mark: { name } }),
    clear: (streamSid) => ({ event: 'clear', stream_sid: streamSid }),
    encode: (clip) => encoded(clip, format, resamplers),
    forFormat: (f, r) => (f.encoding === format.encoding && f.rate === format.rate ? wire : gatewayWire(f, r)),
    close: () => down?.destroy(),
  };
  return wire;
}

/** The carrier's end of a stream in `format` (the simulated callee's, as the fake Exotel runs it). */
export function exotelCallee(format: Format = DEFAULT, resamplers: Resamplers | null = null): CalleeWire {
  return {
    audio: format.encoding,
    frameMs: INBOUND_CHUNK_MS,
    bytesPerMs: bytesPerMs(format),
    silence: format.encoding === 'pcm16' ? 0 : 0xff,
    connected: () => ({ event: 'connected' }),
    start: ({ streamSid, callSid, parameters }) => ({
      event: 'start',
      start: {
        stream_sid: streamSid,
        call_sid: callSid,
        account_sid: 'simulator',
        custom_parameters: parameters,
        media_format:
          format.encoding === 'pcm16'
            ? { encoding: 'audio/x-raw', sample_rate: String(format.rate), bit_rate: '16' }
            : { encoding: 'audio/x-mulaw', sample_rate: '8000', bit_rate: '8' },
      },
    }),
    media: (chunk, timestampMs, payload) => ({
      event: 'media',
      media: { chunk: String(chunk), timestamp: String(timestampMs), payload: payload.toString('base64') },
    }),
    dtmf: (digit) => ({ event: 'dtmf', dtmf: { digit, duration: '100' } }),
    mark: (name) => ({ event: 'mark', mark: { name } }),
    stop: (callSid) => ({ event: 'stop', stop: { call_sid: callSid, account_sid: 'simulator', reason: 'callended' } }),
    stamp: (frame, sequence, streamSid) => ({ ...frame, sequence_number: String(sequence), stream_sid: streamSid }),
    playable: (bytes) => bytes >= MIN_MESSAGE_BYTES && bytes % PAYLOAD_UNIT === 0,
    encode: (clip) => encoded(clip, format, resamplers),
  };
}

export const exotelWire: WireProtocol = { name: 'exotel', gateway: gatewayWire(DEFAULT, null), carrier: exotelCallee() };

/** `chunk` padded with `silence` to a multiple of 320 bytes and at least 3,200. */
function padded(chunk: Buffer, silence: number): Buffer {
  const size = Math.max(MIN_MESSAGE_BYTES, Math.ceil(chunk.length / PAYLOAD_UNIT) * PAYLOAD_UNIT);
  if (size === chunk.length) return chunk;
  const out = Buffer.alloc(size, silence);
  chunk.copy(out);
  return out;
}
