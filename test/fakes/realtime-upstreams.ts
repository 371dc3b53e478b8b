// Local fakes of the three streaming speech-to-text protocols, speaking their real wire shapes
// (shared/reference/speech.md §1b, §1d): OpenAI Realtime transcription (`/v1/realtime?intent=transcription`),
// Sarvam realtime (`/speech-to-text-realtime/ws`), Deepgram live (`/v1/listen`). Each records what it
// got (query, session update, audio bytes per commit) and answers a commit with `text`, or
// misbehaves as `mode` says: `stall` (never answers a commit), `close-on-commit` (drops the socket
// when asked), `close-after-answer` (answers, then drops the socket: a failure between utterances).
// While the speaker talks (audio that is not digital silence), Sarvam sends `transcript.partial` and
// Deepgram interim `Results` every `partialEveryMs` of speech, as the real services do: the words so
// far with the last one cut short (so a hypothesis revises its last word), and Deepgram settles the
// first half of the words on its own (`is_final` before any Finalize), as it does every few seconds.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

export type RealtimeProtocol = 'openai' | 'sarvam' | 'deepgram';
export type FakeMode = 'ok' | 'stall' | 'close-on-commit' | 'close-after-answer';

const PATHS: Record<RealtimeProtocol, string> = { openai: '/v1/realtime', sarvam: '/speech-to-text-realtime/ws', deepgram: '/v1/listen' };
/** The byte of digital silence in each encoding the fakes get (linear16 zero, μ-law 0xFF, A-law 0xD5). */
const SILENCE: Record<string, number> = { linear16: 0x00, mulaw: 0xff, alaw: 0xd5 };
const BYTES_PER_SAMPLE: Record<string, number> = { linear16: 2, mulaw: 1, alaw: 1 };

const AUTH: Record<RealtimeProtocol, (req: IncomingMessage, key: string) => boolean> = {
  openai: (req, key) => req.headers.authorization === `Bearer ${key}`,
  sarvam: (req, key) => req.headers['api-subscription-key'] === key,
  deepgram: (req, key) => req.headers.authorization === `Token ${key}`,
};

export class FakeRealtimeUpstream {
  mode: FakeMode = 'ok';
  text = 'he was not an ill disposed young man';
  partialEveryMs = 300;
  readonly queries: URLSearchParams[] = [];
  readonly sessionUpdates: any[] = [];
  /** Deepgram's `Configure` messages (mid-stream keyterms). */
  readonly configures: any[] = [];
  /** Audio bytes each commit covered, in order. */
  readonly committedBytes: number[] = [];
  connections = 0;
  /** Upgrades refused (wrong path or key). */
  refused = 0;
  private readonly sockets = new Set<WebSocket>();

  private constructor(
    readonly protocol: RealtimeProtocol,
    private readonly server: Server,
    readonly url: string,
    readonly key: string,
  ) {}

  /** The route's base_url for this fake. */
  get baseUrl(): string {
    return this.protocol === 'openai' ? `${this.url}/v1` : this.url;
  }

  static async start(protocol: RealtimeProtocol, key = 'up-key'): Promise<FakeRealtimeUpstream> {
    const server = createServer((_req, res) => res.writeHead(404).end());
    const wss = new WebSocketServer({ noServer: true });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const fake = new FakeRealtimeUpstream(protocol, server, `http://127.0.0.1:${(server.address() as { port: number }).port}`, key);
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const refuse = (status: number) => {
        fake.refused += 1;
        socket.end(`HTTP/1.1 ${status} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      };
      if (url.pathname !== PATHS[protocol]) return refuse(404);
      if (!AUTH[protocol](req, key)) return refuse(401);
      wss.handleUpgrade(req, socket, head, (ws) => fake.serve(ws, url.searchParams));
    });
    return fake;
  }

  private serve(ws: WebSocket, query: URLSearchParams): void {
    this.connections += 1;
    this.queries.push(query);
    this.sockets.add(ws);
    ws.on('close', () => this.sockets.delete(ws));
    let bytes = 0;
    let item = 0;
    // Sarvam and Deepgram: speech heard since the last commit, partials sent, words Deepgram settled.
    const encoding = query.get('encoding') ?? 'linear16';
    const rate = Number(query.get('sample_rate') ?? 16000);
    let speechMs = 0;
    let partials = 0;
    let settled = 0;
    const json = (m: object) => ws.send(JSON.stringify(m));
    const answer = (send: () => void) => {
      this.committedBytes.push(bytes);
      bytes = 0;
      if (this.mode === 'stall') return;
      if (this.mode === 'close-on-commit') return void ws.terminate();
      send();
      if (this.mode === 'close-after-answer') setTimeout(() => ws.close(1011), 20);
    };
    const words = () => this.text.split(' ');
    /** The first `k` words, the last cut short unless it is the text's last. */
    const hypothesis = (k: number) => {
      const w = words().slice(0, k);
      if (k < words().length) w[k - 1] = w[k - 1]!.slice(0, Math.ceil(w[k - 1]!.length / 2));
      return w;
    };
    const results = (text: string, isFinal: boolean, fromFinalize: boolean) => ({
      type: 'Results',
      channel_index: [0, 1],
      is_final: isFinal,
      speech_final: fromFinalize,
      from_finalize: fromFinalize,
      channel: { alternatives: [{ transcript: text, confidence: 0.9, words: [] }] },
    });
    const heard = (audio: Buffer) => {
      if (!audio.some((b) => b !== SILENCE[encoding])) return;
      speechMs += (audio.length / (BYTES_PER_SAMPLE[encoding] ?? 2) / rate) * 1000;
      while (speechMs >= (partials + 1) * this.partialEveryMs && partials < words().length) {
        const w = hypothesis(++partials);
        if (this.protocol === 'sarvam') json({ type: 'transcript.partial', utterance_idx: item, text: w.join(' ') });
        else {
          const half = Math.floor(words().length / 2);
          if (settled === 0 && partials > half) {
            settled = half; // Deepgram ends a piece on its own, interim results asked for or not
            json(results(words().slice(0, half).join(' '), true, false));
          }
          if (query.get('interim_results') === 'true') json(results(w.slice(settled).join(' '), false, false));
        }
      }
    };
    const turnOver = () => {
      speechMs = 0;
      partials = 0;
      settled = 0;
    };
    if (this.protocol === 'openai')
      json({ type: 'transcription_session.created', event_id: 'event_1', session: { id: 'sess_fake', object: 'realtime.transcription_session' } });
    if (this.protocol === 'sarvam') json({ type: 'session.begin', request_id: 'req_fake', config: { encoding: query.get('encoding') } });
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        if (this.protocol === 'deepgram') {
          bytes += (data as Buffer).length;
          heard(data as Buffer);
        }
        return;
      }
      const m = JSON.parse(String(data));
      if (this.protocol === 'openai') {
        if (m.type === 'transcription_session.update') this.sessionUpdates.push(m.session);
        else if (m.type === 'input_audio_buffer.append') bytes += Buffer.from(m.audio, 'base64').length;
        else if (m.type === 'input_audio_buffer.commit') {
          const id = `item_${++item}`;
          answer(() => {
            json({ type: 'input_audio_buffer.committed', item_id: id, previous_item_id: null });
            words().forEach((w, i) =>
              json({ type: 'conversation.item.input_audio_transcription.delta', item_id: id, content_index: 0, delta: i === 0 ? w : ` ${w}` }),
            );
            json({
              type: 'conversation.item.input_audio_transcription.completed',
              item_id: id,
              content_index: 0,
              transcript: this.text,
              usage: { type: 'duration', seconds: 1 },
            });
          });
        }
      } else if (this.protocol === 'sarvam') {
        if (m.type === 'audio_input') {
          const audio = Buffer.from(m.audio, 'base64');
          bytes += audio.length;
          heard(audio);
        } else if (m.type === 'flush') {
          turnOver();
          answer(() => json({ type: 'transcript.final', utterance_idx: item++, text: this.text }));
        }
      } else if (m.type === 'Configure') {
        this.configures.push(m);
        // Deepgram: keyterms on a model other than Nova-3 are refused, the stream going on as it was.
        if (m.keyterms !== undefined && !(query.get('model') ?? '').startsWith('nova-3'))
          json({ type: 'Error', code: 'KeytermsNotSupported', description: 'Keyterms are only supported on Nova-3 models.' });
      } else if (m.type === 'Finalize') {
        const rest = words().slice(settled).join(' ');
        turnOver();
        answer(() => json(results(rest, true, true)));
      }
    });
  }

  async close(): Promise<void> {
    for (const ws of this.sockets) ws.terminate();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
