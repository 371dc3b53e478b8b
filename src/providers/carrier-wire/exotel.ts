// Exotel's Voicebot protocol (the `exotel` carrier's bidirectional stream): snake_case JSON frames,
// base64 PCM16 little-endian at 8 kHz (the stream URL's default; `?sample-rate=` is not used).
//   carrier → gateway: connected, start {stream_sid, call_sid, custom_parameters, media_format
//                      {encoding: "audio/x-raw", sample_rate: "8000", bit_rate: "16"}}, media (~100 ms
//                      chunks), dtmf {digit, duration}, mark {name}, stop
//   gateway → carrier: media {payload} in multiples of 320 bytes and at least 3,200 (100 ms) a
//                      message, mark {name}, clear
// custom_parameters are the query parameters of the stream URL (Exotel: up to 3, 256 characters in
// all): the call id and its one-time token travel there (src/providers/exotel/voice.ts).
import { samplesOf } from '../../speech/pcm.ts';
import { frameParser, type WireProtocol } from './types.ts';

/** 100 ms of 8 kHz PCM16: Exotel's inbound chunk, and the least it takes in one outbound message. */
const CHUNK_BYTES = 3200;
const CHUNK_MS = 100;
/** Outbound payloads are multiples of this (20 ms). */
const PAYLOAD_UNIT = 320;

export const exotelWire: WireProtocol = {
  name: 'exotel',
  gateway: {
    audio: 'pcm16',
    chunkBytes: CHUNK_BYTES,
    chunkMs: CHUNK_MS,
    // 32 KB of base64 is 1.5 s of PCM16: 15 of Exotel's chunks. An odd byte count is not PCM16.
    parse: frameParser(
      { streamSid: 'stream_sid', parameters: 'custom_parameters' },
      { maxChars: 32_768, decode: (bytes) => (bytes.length % 2 === 0 ? samplesOf(bytes) : null) },
    ),
    // A reply's last chunk is padded with silence to a full 100 ms: Exotel plays nothing shorter.
    media: (streamSid, chunk) => ({ event: 'media', stream_sid: streamSid, media: { payload: padded(chunk).toString('base64') } }),
    mark: (streamSid, name) => ({ event: 'mark', stream_sid: streamSid, mark: { name } }),
    clear: (streamSid) => ({ event: 'clear', stream_sid: streamSid }),
  },
  carrier: {
    audio: 'pcm16',
    frameMs: CHUNK_MS,
    bytesPerMs: CHUNK_BYTES / CHUNK_MS,
    silence: 0,
    connected: () => ({ event: 'connected' }),
    start: ({ streamSid, callSid, parameters }) => ({
      event: 'start',
      start: {
        stream_sid: streamSid,
        call_sid: callSid,
        account_sid: 'simulator',
        custom_parameters: parameters,
        media_format: { encoding: 'audio/x-raw', sample_rate: '8000', bit_rate: '16' },
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
    playable: (bytes) => bytes >= CHUNK_BYTES && bytes % PAYLOAD_UNIT === 0,
  },
};

/** `chunk` padded with silence to a multiple of 320 bytes and at least 3,200. */
function padded(chunk: Buffer): Buffer {
  const size = Math.max(CHUNK_BYTES, Math.ceil(chunk.length / PAYLOAD_UNIT) * PAYLOAD_UNIT);
  if (size === chunk.length) return chunk;
  const out = Buffer.alloc(size);
  chunk.copy(out);
  return out;
}
