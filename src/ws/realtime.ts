// WS /v1/audio/transcriptions/stream: the WebSocket edge. Plain `ws` with `noServer`, on the HTTP
// server's 'upgrade' event, so everything that can refuse happens BEFORE the upgrade and is answered
// as an HTTP error envelope with its status (and x-request-id): the path, shutdown, the query, the
// key (Authorization header or `api_key` query; scope `audio`), the key's RPM, the per-key socket
// cap (429), the model, the language, KYC and the first tick's hold (402). After the upgrade a
// refusal is an `error` frame, then a close with a fitting code.
//
// Limits, per socket: `maxPayload` (a larger frame is closed with 1009 by ws itself, no error frame),
// ping every `pingIntervalMs` and terminated when a pong is missed, audio faster than real time
// allowed up to `rateFactor` after a burst of `burstSeconds` (past it the frames wait, in order, read
// but not taken, until real time catches up; more than `maxBacklogBytes` of them and the socket is
// paused: TCP pushes back on the client, nothing is dropped), a budget of malformed
// frames (past it: close 1008), and the send buffer: a client that leaves more than
// `maxBufferedBytes` of our frames unread is cut (terminate), billed for the audio it sent.
// This file translates frames to session calls and session outputs to frames; nothing more.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { ApiError } from '../errors.ts';
import type { EndReason } from '../../machines/realtime-session.machine.ts';
import type { Opening, RealtimeService, Reservation } from '../realtime/service.ts';
import type { RealtimeSession, SessionOutput } from '../realtime/session.ts';
import type { ApiKeyPrincipal, KeyService } from '../identity/keys.ts';
import type { Billing } from '../billing/types.ts';
import { answerAndClose } from '../http/raw-reply.ts';
import { newRequestId } from '../http/request-id.ts';
import { errorFrame, FrameError, gaCreatedFrame, gaPendingCreatedFrame, parseClientFrame, serverFrame } from './frames.ts';
import { checkModelName, readStreamQuery, type SocketQuery } from './query.ts';

export const STREAM_PATH = '/v1/audio/transcriptions/stream';
/**
 * OpenAI's realtime URL, where its clients connect (the `openai` package's `OpenAIRealtimeWS` builds
 * `{baseURL}/realtime?model=…`): the same socket, transcription only, its audio by default OpenAI's
 * `pcm16` (24 kHz).
 */
export const OPENAI_PATH = '/v1/realtime';

export interface SocketLimits {
  maxPayloadBytes: number;
  pingIntervalMs: number;
  maxBufferedBytes: number;
  maxBacklogBytes: number;
  rateFactor: number;
  burstSeconds: number;
  maxBadFrames: number;
}

export interface RealtimeEdgeDeps {
  keys: Pick<KeyService, 'authenticate'>;
  billing: Pick<Billing, 'admit'>;
  realtime: RealtimeService;
  limits: SocketLimits;
  closing(): boolean;
  logger: Logger;
  /** Paths another WebSocket edge on the same server answers (the voice calls' media streams): left to it. */
  ownsPath?(pathname: string): boolean;
}

/**
 * How long a socket opened with OpenAI's `intent=transcription` and no model may wait for the
 * `session.update` that names it; then it is closed (1008) with an error frame, nothing billed.
 */
export const MODEL_WAIT_MS = 30_000;

/**
 * How a socket starts: `now`, its metered session admitted before the upgrade (the model in the
 * query); or `later`, holding only its place under the caps until its first update names the model.
 */
type Start =
  | { kind: 'now'; opening: Opening }
  | { kind: 'later'; reservation: Reservation; principal: ApiKeyPrincipal; query: SocketQuery & { model: null }; requestId: string };

/** Close codes: RFC 6455's, by why the session ended. */
const CLOSE_CODES: Record<EndReason, number> = {
  client_closed: 1000,
  client_vanished: 1000,
  idle: 1000,
  shutdown: 1001,
  limit: 1008,
  unauthorized: 1008,
  insufficient_credit: 1008,
  upstream_failed: 1011,
  error: 1011,
  orphaned: 1011,
};

export interface RealtimeEdge {
  /** Stops taking upgrades (sessions are ended by the service's close). */
  close(): void;
}

export function attachRealtimeEdge(server: Server, deps: RealtimeEdgeDeps): RealtimeEdge {
  const wss = new WebSocketServer({ noServer: true, maxPayload: deps.limits.maxPayloadBytes, perMessageDeflate: false, clientTracking: false });
  const ids = new WeakMap<IncomingMessage, string>();
  wss.on('headers', (headers, req) => {
    const id = ids.get(req);
    if (id) headers.push(`x-request-id: ${id}`);
  });
  const access = deps.logger.child({ component: 'realtime' });

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (deps.ownsPath?.(new URL(req.url ?? '/', 'http://gateway').pathname)) return;
    const requestId = newRequestId();
    ids.set(req, requestId);
    const refuse = (err: ApiError) => {
      access.info({ request_id: requestId, req, status: err.status, code: err.code }, 'realtime upgrade refused');
      answerAndClose(socket as Socket, err, requestId, false);
    };
    socket.on('error', () => {}); // a peer gone meanwhile is not our failure
    admit(req, requestId).then(
      ({ start, openaiPath, recheck }) => {
        const cancel = () => (start.kind === 'now' ? start.opening.cancel() : start.reservation.release());
        if (socket.destroyed) return cancel();
        let upgraded = false;
        socket.once('close', () => {
          if (!upgraded) cancel();
        });
        wss.handleUpgrade(req, socket, head, (ws) => {
          upgraded = true;
          access.info({ request_id: requestId, req, status: 101, session_id: sessionIdOf(start) }, 'realtime upgrade');
          serve(ws, start, requestId, recheck, openaiPath);
        });
      },
      (err: unknown) => refuse(err instanceof ApiError ? err : internal(err, requestId)),
    );
  };

  const internal = (err: unknown, requestId: string) => {
    access.error({ err, request_id: requestId }, 'realtime upgrade failed');
    return new ApiError('internal_error', 'The gateway failed to open the session; it has been logged with this request id.');
  };

  async function admit(req: IncomingMessage, requestId: string) {
    const url = new URL(req.url ?? '/', 'http://gateway');
    if (url.pathname !== STREAM_PATH && url.pathname !== OPENAI_PATH)
      throw new ApiError('not_found', `No WebSocket endpoint at ${url.pathname.slice(0, 200)}; use ${STREAM_PATH}.`);
    if (deps.closing()) throw new ApiError('shutting_down', 'The gateway is shutting down; retry on another instance.');
    const openaiPath = url.pathname === OPENAI_PATH;
    const query = readStreamQuery(url.searchParams, openaiPath);
    const key = url.searchParams.get('api_key');
    const authorization = req.headers.authorization ?? (key ? `Bearer ${key}` : undefined);
    const principal: ApiKeyPrincipal = await deps.keys.authenticate(authorization, 'audio');
    await deps.billing.admit(principal);
    // The key is checked again while the socket is open (a revoked or expired key ends it); the
    // credential stays in this closure, in memory only.
    const recheck = async () => void (await deps.keys.authenticate(authorization, 'audio'));
    const start: Start =
      query.model === null
        ? { kind: 'later', reservation: deps.realtime.reserve(principal), principal, query: { ...query, model: null }, requestId }
        : { kind: 'now', opening: await deps.realtime.admit(principal, { ...query, model: query.model }, requestId) };
    return { start, openaiPath, recheck };
  }

  /** `openaiPath`: the socket came in on OpenAI's URL, whose GA clients also wait for `session.created`. */
  function serve(ws: WebSocket, start: Start, requestId: string, recheck: () => Promise<void>, openaiPath: boolean) {
    const { limits } = deps;
    const returnTimestamps = start.kind === 'now' ? start.opening.params.returnTimestamps : start.query.returnTimestamps;
    const log = access.child({ request_id: requestId, session_id: sessionIdOf(start) });
    ws.pause(); // nothing is read until the session is ready
    let session: RealtimeSession | null = null;
    let clientEventId: string | null = null;
    let badFrames = 0;
    let alive = true;
    let firstAudioAt = 0;
    let resumeTimer: NodeJS.Timeout | null = null;

    const sendText = (text: string) => {
      if (ws.readyState !== ws.OPEN) return;
      if (ws.bufferedAmount > limits.maxBufferedBytes) {
        log.warn({ buffered: ws.bufferedAmount }, 'realtime client not reading its frames: cut');
        ws.terminate();
        return;
      }
      ws.send(text);
    };
    const sink = {
      send: (out: SessionOutput) => {
        sendText(serverFrame(out, { requestId, returnTimestamps, clientEventId }));
        // A socket whose model came later was greeted at its upgrade (gaPendingCreatedFrame).
        if (out.type === 'created' && openaiPath && start.kind === 'now') sendText(gaCreatedFrame(out.session));
      },
      close: (reason: EndReason) => {
        if (ws.readyState === ws.OPEN) ws.close(CLOSE_CODES[reason], reason);
      },
    };
    const ping = setInterval(() => {
      // Paused by us (its backlog is full): its pong may be behind its own audio, not held against it.
      if (held) return;
      if (!alive) {
        log.info('realtime client missed a pong: cut');
        ws.terminate();
        return;
      }
      alive = false;
      ws.ping();
    }, limits.pingIntervalMs);
    ping.unref();
    ws.on('pong', () => (alive = true));
    ws.on('error', (err) => log.info({ err: err.message }, 'realtime socket error'));
    ws.on('close', (code) => {
      clearInterval(ping);
      if (resumeTimer) clearTimeout(resumeTimer);
      backlog.length = 0; // read ahead of the rate and not taken: dropped, unbilled
      if (session) session.clientGone(code === 1006);
      else if (start.kind === 'now') start.opening.cancel();
      else if (!choosing) start.reservation.release(); // else released by the admission under way, when it sees the socket gone
    });

    /**
     * Audio faster than real time × rateFactor (after the burst) is not taken until it is not: the
     * frames after it wait in `backlog`, in order, and are taken as real time catches up. The socket
     * is still read meanwhile, so pings, pongs and the close frame are not stuck behind the audio;
     * past `maxBacklogBytes` waiting it is paused (`held`) until the backlog is taken.
     */
    const backlog: [RawData, boolean][] = [];
    let backlogBytes = 0;
    let held = false;
    const pace = (s: RealtimeSession) => {
      const now = Date.now();
      if (firstAudioAt === 0) firstAudioAt = now;
      const allowedMs = limits.burstSeconds * 1000 + limits.rateFactor * (now - firstAudioAt);
      const ahead = s.audioMs - allowedMs;
      if (ahead > 0 && !resumeTimer) resumeTimer = setTimeout(() => drain(s), Math.ceil(ahead / limits.rateFactor));
    };
    const drain = (s: RealtimeSession) => {
      resumeTimer = null;
      while (backlog.length > 0 && !resumeTimer && !s.isEnded) {
        const [data, isBinary] = backlog.shift()!;
        backlogBytes -= sizeOf(data);
        onMessage(s, data, isBinary);
      }
      if (s.isEnded) {
        backlog.length = 0; // the session is over: what waits is dropped, and the close handshake is read
        backlogBytes = 0;
      }
      if (held && backlogBytes <= limits.maxBacklogBytes && ws.readyState !== ws.CLOSED) {
        held = false;
        ws.resume();
      }
    };
    const take = (s: RealtimeSession, data: RawData, isBinary: boolean) => {
      if (!resumeTimer && backlog.length === 0) return onMessage(s, data, isBinary);
      backlog.push([data, isBinary]);
      backlogBytes += sizeOf(data);
      if (!held && backlogBytes > limits.maxBacklogBytes) {
        held = true;
        ws.pause();
      }
    };

    const countBadFrame = (s: RealtimeSession) => {
      if (++badFrames > limits.maxBadFrames)
        s.end('limit', { code: 'invalid_request', message: `More than ${limits.maxBadFrames} malformed frames; the session is closed.` });
    };
    const onMessage = (s: RealtimeSession, data: RawData, isBinary: boolean) => {
      if (s.isEnded) return;
      const bytes = bytesOf(data);
      clientEventId = null;
      try {
        if (isBinary) {
          s.audio(bytes);
          pace(s);
          return;
        }
        const event = parseClientFrame(bytes.toString('utf8'));
        clientEventId = event.eventId;
        switch (event.type) {
          case 'input_audio_buffer.append':
            s.audio(event.audio);
            pace(s);
            break;
          case 'input_audio_buffer.commit':
            s.commit();
            break;
          case 'input_audio_buffer.clear':
            s.clear();
            break;
          case 'session.update':
          case 'transcription_session.update':
            // Its refused settings are answered by the session (an error frame each, then the rest applied).
            s.update(event.update);
            if (event.update.refused.length > 0) countBadFrame(s);
            break;
        }
      } catch (err) {
        if (!(err instanceof ApiError)) {
          log.error({ err }, 'realtime frame failed');
          s.end('error', { code: 'internal_error', message: 'The gateway failed on this frame; it has been logged with this request id.' });
          return;
        }
        sendText(errorFrame(err.code, err.message, requestId, err.options.param, err instanceof FrameError ? err.eventId : clientEventId));
        if (err instanceof FrameError) countBadFrame(s);
      } finally {
        clientEventId = null;
      }
    };

    /** The session accepted: the socket's frames go to it (`waiting` first, in order). */
    const opened = (s: RealtimeSession, waiting: [RawData, boolean][] = []) => {
      session = s;
      if (ws.readyState !== ws.OPEN) {
        s.clientGone(true);
        return;
      }
      ws.on('message', (data, isBinary) => take(s, data, isBinary));
      for (const [data, isBinary] of waiting) take(s, data, isBinary);
      if (!held) ws.resume(); // else the backlog resumes it when taken
    };
    const failed = (err: unknown, code: number) => {
      const e = err instanceof ApiError ? err : internal(err, requestId);
      sendText(errorFrame(e.code, e.message, requestId, e.options.param));
      if (ws.readyState === ws.OPEN) ws.close(code, code === 1008 ? 'refused' : 'error');
    };
    let choosing = false;

    if (start.kind === 'now') {
      start.opening.accept(sink, recheck).then(opened, (err: unknown) => failed(err, 1011));
      return;
    }

    // OpenAI's intent=transcription without a model: greeted now; every frame waits, in order, until
    // an update names the model (audio waits with them: past maxBacklogBytes the socket is paused,
    // TCP pushing back). Then the metered session opens in the reserved place with the query's
    // settings and that model, takes that update first (its format, language and turn detection
    // are the session's from its start, so the audio that waited is read with them), then the
    // frames that waited, in order, as if they came then: billed as any session's audio, at that
    // model's price. A socket closed before a model is named, or whose model is refused (an error
    // frame, then close 1008), pays nothing; one that names none within MODEL_WAIT_MS is closed.
    const later = start;
    sendText(gaPendingCreatedFrame(later.reservation.sessionId, later.query));
    const waiting: [RawData, boolean][] = [];
    let waitingBytes = 0;
    const timer = setTimeout(
      () =>
        failed(new ApiError('missing_input', `No session.update named the transcription model within ${MODEL_WAIT_MS / 1000} s.`, { param: 'session' }), 1008),
      MODEL_WAIT_MS,
    );
    timer.unref();
    ws.on('close', () => clearTimeout(timer));
    const early = (data: RawData, isBinary: boolean) => {
      waiting.push([data, isBinary]);
      waitingBytes += sizeOf(data);
      if (!held && waitingBytes > limits.maxBacklogBytes) {
        held = true;
        ws.pause();
      }
      if (choosing || isBinary) return;
      const model = modelNamed(data);
      if (model === null) return;
      choosing = true;
      clearTimeout(timer);
      waiting.unshift(waiting.pop()!); // the update that names the model first
      deps.realtime
        .admit(later.principal, { ...later.query, model }, later.requestId, later.reservation)
        .then((opening) => {
          if (ws.readyState !== ws.OPEN) return opening.cancel();
          return opening.accept(sink, recheck).then((s) => {
            // Frames that came meanwhile waited too; from here they go to the session.
            ws.off('message', early);
            held = false;
            opened(s, waiting.splice(0));
          });
        })
        .catch((err: unknown) => failed(err, err instanceof ApiError && err.status < 500 ? 1008 : 1011));
    };
    /** The model an update names (checked as the query's would be); null when the frame names none. */
    const modelNamed = (data: RawData): string | null => {
      let event: ReturnType<typeof parseClientFrame>;
      try {
        event = parseClientFrame(bytesOf(data).toString('utf8'));
      } catch {
        return null; // the session answers it when the frames are replayed
      }
      if ((event.type !== 'session.update' && event.type !== 'transcription_session.update') || !event.update.model) return null;
      try {
        checkModelName(event.update.model.name, event.update.model.param, 'field');
      } catch (err) {
        sendText(errorFrame((err as ApiError).code, (err as ApiError).message, requestId, (err as ApiError).options.param, event.eventId));
        return null;
      }
      return event.update.model.name;
    };
    ws.on('message', early);
    ws.resume();
  }

  server.on('upgrade', onUpgrade);
  return {
    close() {
      server.off('upgrade', onUpgrade);
    },
  };
}

const sessionIdOf = (start: Start): string => (start.kind === 'now' ? start.opening.params.sessionId : start.reservation.sessionId);

const bytesOf = (data: RawData): Buffer => (Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data));

const sizeOf = (data: RawData): number => (Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : data.byteLength);
