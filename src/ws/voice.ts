// WS /v1/voice/calls/{id}/stream: the carriers' media streams, JSON text frames in the protocol of
// the call's carrier (src/providers/carrier-wire/: Twilio's Media Streams, which the simulator speaks too, or
// Exotel's Voicebot). Plain `ws` with `noServer` on the HTTP server's 'upgrade' event. The
// upgrade is refused (an HTTP error envelope) unless the call is live on this instance; the stream is
// then believed only once its `start` frame carries the call's one-time token in its parameters
// (the only per-call channel Twilio gives a stream: its Stream URL takes no query string): a wrong
// token, a second socket, or frames before `start` close it (1008) and change nothing. Limits per
// socket: `maxPayload`, a budget of frames per second (Twilio sends 50 media frames a second) and of
// malformed frames, our send buffer, and time: a socket whose `start` was not taken within
// `startTimeoutMs` of its upgrade is closed (1008), and any socket still open once its call's live
// side is gone (the call ended) is closed (1001): a sweep every `SWEEP_MS` looks. A stream for a call
// no longer live here whose URL names it (`?call_id=`: Exotel's) is accepted and closed at once (1000):
// that ends the carrier's leg of a call cancelled while it rang. This file translates frames; the media loop is src/voice/media.ts.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { ApiError } from '../errors.ts';
import { answerAndClose } from '../http/raw-reply.ts';
import { newRequestId } from '../http/request-id.ts';
import type { VoiceCalls } from '../voice/service.ts';
import type { CallMedia, MediaStream } from '../voice/media.ts';

const STREAM_PATH = /^\/v1\/voice\/calls\/([^/]{1,64})\/stream$/;
const CALL_ID = /^call_[0-9a-f]{24}$/;
/** Frames a second a stream may send (about 5× Twilio's media rate). */
const MAX_FRAMES_PER_SECOND = 250;
const MAX_BAD_FRAMES = 20;
const MAX_BUFFERED_BYTES = 1 << 20;
/** How often the open sockets are looked at for their start deadline and their call's end. */
const SWEEP_MS = 250;

export const isVoiceStreamPath = (pathname: string): boolean => STREAM_PATH.test(pathname);

export interface VoiceEdge {
  close(): void;
}

export interface VoiceEdgeDeps {
  voice: VoiceCalls;
  maxPayloadBytes: number;
  /** A socket whose `start` frame was not taken this long after its upgrade is closed. */
  startTimeoutMs: number;
  closing(): boolean;
  logger: Logger;
}

/** An open stream socket, as the sweep sees it. */
interface Open {
  ws: WebSocket;
  callId: string;
  media: CallMedia;
  openedAt: number;
  started: boolean;
}

export function attachVoiceEdge(server: Server, deps: VoiceEdgeDeps): VoiceEdge {
  const wss = new WebSocketServer({ noServer: true, maxPayload: deps.maxPayloadBytes, perMessageDeflate: false, clientTracking: false });
  const log = deps.logger.child({ component: 'voice-stream' });
  const open = new Set<Open>();
  let sweeper: NodeJS.Timeout | null = null;

  /** Closes the sockets past their start deadline, and those whose call's live side is gone. */
  const sweep = () => {
    const now = Date.now();
    for (const o of open) {
      if (deps.voice.media(o.callId) !== o.media) o.ws.close(1001, 'call ended');
      else if (!o.started && now - o.openedAt >= deps.startTimeoutMs) o.ws.close(1008, 'no start frame in time');
      else continue;
      open.delete(o);
    }
    if (open.size === 0 && sweeper) {
      clearInterval(sweeper);
      sweeper = null;
    }
  };
  const track = (o: Open) => {
    open.add(o);
    o.ws.on('close', () => open.delete(o));
    sweeper ??= setInterval(sweep, SWEEP_MS).unref();
  };

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://gateway');
    const m = STREAM_PATH.exec(url.pathname);
    if (!m) return; // the realtime edge's
    const requestId = newRequestId();
    socket.on('error', () => {});
    const refuse = (err: ApiError) => answerAndClose(socket as Socket, err, requestId, false);
    if (deps.closing()) return refuse(new ApiError('shutting_down', 'The gateway is shutting down.'));
    const callId = m[1]!;
    const media = deps.voice.media(callId);
    if (!media && CALL_ID.test(callId) && url.searchParams.get('call_id') === callId) {
      // A carrier's leg of a call no longer live here (an Exotel call cancelled or timed out while it
      // rang, then answered): its stream is accepted and closed at once, which ends the leg at
      // Exotel (it has no hang-up API); a refused handshake is retried, then left in dead air Exotel
      // bills. Only stream URLs the gateway gave out name the call in their query; nothing is read.
      log.info({ call_id: callId }, 'stream of a call no longer live here: closed, ending its carrier leg');
      return wss.handleUpgrade(req, socket, head, (ws) => ws.close(1000, 'call ended'));
    }
    if (!media) return refuse(new ApiError('not_found', 'No live call here with that id.'));
    wss.handleUpgrade(req, socket, head, (ws) => serve(ws, callId, media));
  };

  function serve(ws: WebSocket, callId: string, media: CallMedia) {
    const slog = log.child({ call_id: callId });
    const tracked: Open = { ws, callId, media, openedAt: Date.now(), started: false };
    track(tracked);
    ws.on('error', (err) => slog.debug({ err }, 'stream socket error'));
    const stream: MediaStream = {
      send(frame) {
        if (ws.readyState !== ws.OPEN) return;
        if (ws.bufferedAmount > MAX_BUFFERED_BYTES) return void ws.terminate();
        ws.send(JSON.stringify(frame));
      },
      close(code, reason) {
        if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(code, reason);
      },
    };
    let windowStart = Date.now();
    let frames = 0;
    let bad = 0;
    ws.on('message', (data: RawData, isBinary: boolean) => {
      const now = Date.now();
      if (now - windowStart >= 1000) {
        windowStart = now;
        frames = 0;
      }
      if (++frames > MAX_FRAMES_PER_SECOND) return void ws.close(1008, 'too many frames');
      let parsed: unknown = null;
      if (!isBinary) {
        try {
          parsed = JSON.parse(String(data));
        } catch {
          parsed = null;
        }
      }
      let refused: string | null;
      try {
        refused =
          parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
            ? media.frame(stream, parsed as Record<string, unknown>)
            : 'not a JSON object';
      } catch (err) {
        // A frame the media loop could not take never takes the process down: the stream ends, the call with it.
        slog.warn({ err }, 'stream frame failed');
        return void ws.close(1011, 'error');
      }
      if (refused === null) {
        if ((parsed as { event?: unknown }).event === 'start') tracked.started = true;
        return;
      }
      slog.debug({ refused }, 'stream frame refused');
      if (refused === 'bad token' || refused === 'the stream has started already' || ++bad > MAX_BAD_FRAMES) ws.close(1008, refused.slice(0, 100));
    });
    ws.on('close', () => media.detached(stream));
  }

  server.on('upgrade', onUpgrade);
  return {
    close() {
      server.off('upgrade', onUpgrade);
      if (sweeper) clearInterval(sweeper);
      sweeper = null;
    },
  };
}
