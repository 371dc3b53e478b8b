// Twilio's Media Streams protocol (what the `twilio` carrier's stream speaks, and the simulator's):
// camelCase JSON frames, base64 μ-law 8 kHz, 20 ms (160 bytes) a media message either way.
//   carrier → gateway: connected, start {streamSid, callSid, customParameters, mediaFormat}, media,
//                      dtmf {digit}, mark {name} (echoed when the audio before it played or was cleared), stop
//   gateway → carrier: media {payload}, mark {name}, clear
// customParameters are the <Parameter>s of the TwiML's <Stream>: the call id and its one-time token.
import { g711Decode } from '../../speech/g711.ts';
import { frameParser, type WireProtocol } from './types.ts';

const FRAME_BYTES = 160;
const FRAME_MS = 20;

export const twilioWire: WireProtocol = {
  name: 'twilio',
  gateway: {
    audio: 'mulaw',
    chunkBytes: FRAME_BYTES,
    chunkMs: FRAME_MS,
    // 8 KB of base64 is 300 ms of μ-law: 15 of Twilio's frames.
    parse: frameParser({ streamSid: 'streamSid', parameters: 'customParameters' }, { maxChars: 8192, decode: (bytes) => g711Decode('mulaw', bytes) }),
    media: (streamSid, chunk) => ({ event: 'media', streamSid, media: { payload: chunk.toString('base64') } }),
    mark: (streamSid, name) => ({ event: 'mark', streamSid, mark: { name } }),
    clear: (streamSid) => ({ event: 'clear', streamSid }),
  },
  carrier: {
    audio: 'mulaw',
    frameMs: FRAME_MS,
    bytesPerMs: FRAME_BYTES / FRAME_MS,
    silence: 0xff,
    connected: () => ({ event: 'connected', protocol: 'Call', version: '1.0.0' }),
    start: ({ streamSid, callSid, parameters }) => ({
      event: 'start',
      start: {
        streamSid,
        accountSid: 'ACsimulator',
        callSid,
        tracks: ['inbound'],
        customParameters: parameters,
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    }),
    media: (chunk, timestampMs, payload) => ({
      event: 'media',
      media: { track: 'inbound', chunk: String(chunk), timestamp: String(timestampMs), payload: payload.toString('base64') },
    }),
    dtmf: (digit) => ({ event: 'dtmf', dtmf: { track: 'inbound_track', digit } }),
    mark: (name) => ({ event: 'mark', mark: { name } }),
    stop: (callSid) => ({ event: 'stop', stop: { accountSid: 'ACsimulator', callSid } }),
    stamp: (frame, sequence, streamSid) => ({ ...frame, sequenceNumber: String(sequence), streamSid }),
    playable: () => true,
  },
};
