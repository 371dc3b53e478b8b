// A carrier's media stream protocol (the carrier port's `wire`, src/providers/carrier.ts; on the
// providers' floor with the carriers that speak it), both ends of it: the gateway's (`MediaWire`:
// what the media loop, src/voice/media.ts, reads from the carrier's frames and sends back) and the
// carrier's (`CalleeWire`: what the simulated callee, src/providers/simulator/voice.ts, sends and
// plays). One file per protocol: twilio.ts (Media Streams: μ-law, 20 ms frames, camelCase) and
// exotel.ts (Voicebot: PCM16 LE, 100 ms chunks in, 3,200-byte messages out, snake_case). Both carry 8 kHz mono JSON text frames
// with base64 audio, and the same control: `start` with the call's parameters, `mark` echoes, `clear`.
// Exotel's streams may come at 16 or 24 kHz, or in μ-law (its `start`'s `media_format`): the wire of
// such a stream (`forFormat`) decodes and resamples to 8 kHz in, and encodes the replies at its rate out.
import type { SpeechClip } from '../../speech/clip.ts';
import type { Resamplers } from '../../speech/resample.ts';

/**
 * A stream's audio as its `start` frame declares it (Exotel's `media_format`): its encoding and
 * sample rate, or why the gateway cannot take it. Absent: the protocol's one format.
 */
export type StreamFormat = { encoding: WireAudio; rate: 8000 | 16000 | 24000 } | { unsupported: string };

/** A frame from the carrier, as the media loop takes it (audio decoded to 8 kHz PCM16 samples). */
export type Inbound =
  | { event: 'connected' }
  | { event: 'start'; token: string | null; streamSid: string | null; format?: StreamFormat }
  | { event: 'media'; samples: Int16Array }
  | { event: 'mark'; name: string }
  | { event: 'dtmf'; digit: string }
  | { event: 'stop' }
  /** A frame the protocol does not allow: why. */
  | { event: 'refused'; why: string };

/** The reply audio a protocol carries: 8 kHz μ-law or 8 kHz PCM16 little-endian (src/speech/clip.ts has both). */
export type WireAudio = 'mulaw' | 'pcm16';

/** The gateway's end of a carrier's media stream. */
export interface MediaWire {
  audio: WireAudio;
  /** One outbound media message: its bytes of audio and how long they play. */
  chunkBytes: number;
  chunkMs: number;
  parse(frame: Record<string, unknown>): Inbound;
  /** A media message carrying `chunk` (at most chunkBytes; the protocol may pad it). */
  media(streamSid: string | null, chunk: Buffer): Record<string, unknown>;
  mark(streamSid: string | null, name: string): Record<string, unknown>;
  clear(streamSid: string | null): Record<string, unknown>;
  /** A reply's audio in this stream's encoding and rate (absent: `clip.as(audio)`, 8 kHz). */
  encode?(clip: SpeechClip): Buffer;
  /**
   * The wire of one stream whose `start` declared `format` (a protocol whose streams come in
   * several rates: Exotel's), made with the instance's resamplers; absent: only its own format.
   */
  forFormat?(format: Extract<StreamFormat, { rate: number }>, resamplers: Resamplers): MediaWire;
  /** Frees what a stream's wire holds (its resampler), once the stream is over. */
  close?(): void;
}

/** The carrier's end: what a (simulated) carrier sends the gateway, and what it accepts from it. */
export interface CalleeWire {
  audio: WireAudio;
  /** The callee's audio goes out in frames of this many ms; the gateway's plays at bytesPerMs. */
  frameMs: number;
  bytesPerMs: number;
  /** A byte of silence in this audio. */
  silence: number;
  connected(): Record<string, unknown>;
  start(call: { streamSid: string; callSid: string; parameters: Record<string, string> }): Record<string, unknown>;
  media(chunk: number, timestampMs: number, payload: Buffer): Record<string, unknown>;
  dtmf(digit: string): Record<string, unknown>;
  mark(name: string): Record<string, unknown>;
  stop(callSid: string): Record<string, unknown>;
  /** Adds the per-frame stamps (sequence number, stream id) under the protocol's names. */
  stamp(frame: Record<string, unknown>, sequence: number, streamSid: string): Record<string, unknown>;
  /** Whether the carrier plays a media payload of this many bytes (Exotel: multiples of 320, at least 3,200). */
  playable(bytes: number): boolean;
  /** The callee's speech in this stream's encoding and rate (absent: `clip.as(audio)`, 8 kHz). */
  encode?(clip: SpeechClip): Buffer;
}

export interface WireProtocol {
  name: 'twilio' | 'exotel';
  gateway: MediaWire;
  carrier: CalleeWire;
}

/**
 * The gateway's reading of a carrier's frames, which the two protocols share but for the names of
 * the stream id and of the start's parameters, and how a media payload decodes.
 */
export function frameParser(
  names: { streamSid: string; parameters: string },
  media: { maxChars: number; decode(bytes: Buffer): Int16Array | null },
  /** The stream's format, read from its `start` (a protocol whose streams come in several). */
  format?: (start: unknown) => StreamFormat,
): (frame: Record<string, unknown>) => Inbound {
  const field = (o: unknown, name: string): unknown => (o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[name] : undefined);
  const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  return (m) => {
    switch (m.event) {
      case 'connected':
        return { event: 'connected' };
      case 'start':
        return {
          event: 'start',
          token: text(field(field(m.start, names.parameters), 'token')),
          streamSid: text(field(m.start, names.streamSid)) ?? text(m[names.streamSid]),
          ...(format ? { format: format(m.start) } : {}),
        };
      case 'media': {
        const payload = text(field(m.media, 'payload'));
        const samples = payload !== null && payload.length <= media.maxChars ? media.decode(Buffer.from(payload, 'base64')) : null;
        return samples ? { event: 'media', samples } : { event: 'refused', why: 'bad media payload' };
      }
      case 'mark': {
        const name = text(field(m.mark, 'name'));
        return name !== null ? { event: 'mark', name } : { event: 'refused', why: 'bad mark' };
      }
      case 'dtmf': {
        const digit = text(field(m.dtmf, 'digit'));
        return digit !== null && /^[0-9*#]$/.test(digit) ? { event: 'dtmf', digit } : { event: 'refused', why: 'bad dtmf digit' };
      }
      case 'stop':
        return { event: 'stop' };
      default:
        return { event: 'refused', why: 'unknown event' };
    }
  };
}
