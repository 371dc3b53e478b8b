// Local fakes of the three streaming speech-to-text protocols, speaking their real wire shapes
// (shared/reference/speech.md §1b, §1d): OpenAI Realtime transcription (`/v1/realtime?intent=transcription`),
// Sarvam realtime (`/speech-to-text-realtime/ws`), Deepgram live (`/v1/listen`). Each records what it
// got (query, session update, audio bytes per commit) and answers a commit with `text`, or
// misbehaves as `mode` says: `stall` (never answers a commit), `close-on-commit` (drops the socket
// when asked), `close-after-answer` (answers, then drops the socket: a failure between utterances).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

export type RealtimeProtocol = 'openai' | 'sarvam' | 'deepgram';
export type FakeMode = 'ok' | 'stall' | 'close-on-commit' | 'close-after-answer';

const PATHS: Record<RealtimeProtocol, string> = { openai: '/v1/realtime', sarvam: '/speech-to-text-realtime/ws', deepgram: '/v1/listen' };
const AUTH: Record<RealtimeProtocol, (req: IncomingMessage, key: string) => boolean> = {
  openai: (req, key) => req.headers.authorization === `Bearer ${key}`,
  sarvam: (req, key) => req.headers['api-subscription-key'] === key,
  deepgram: (req, key) => req.headers.authorization === `Token ${key}`,
};

export class FakeRealtimeUpstream {
  mode: FakeMode = 'ok';
  text = 'he was not an ill disposed young man';
  readonly queries: URLSearchParams[] = [];
  readonly sessionUpdates: any[] = [];
  /** Audio bytes each commit covered, in order. */
  readonly committedBytes: number[] = [];
  connections = 0;
  private readonly sockets = new Set<WebSocket>();

  private constructor(
    readonly protocol: RealtimeProtocol,
    private readonly server: Server,
    readonly url: string,
    private readonly key: string,
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
      const refuse = (status: number) => socket.end(`HTTP/1.1 ${status} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
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
    if (this.protocol === 'openai') json({ type: 'transcription_session.created', event_id: 'event_1', session: { id: 'sess_fake', object: 'realtime.transcription_session' } });
    if (this.protocol === 'sarvam') json({ type: 'session.begin', request_id: 'req_fake', config: { encoding: query.get('encoding') } });
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        if (this.protocol === 'deepgram') bytes += (data as Buffer).length;
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
            words().forEach((w, i) => json({ type: 'conversation.item.input_audio_transcription.delta', item_id: id, content_index: 0, delta: i === 0 ? w : ` ${w}` }));
            json({ type: 'conversation.item.input_audio_transcription.completed', item_id: id, content_index: 0, transcript: this.text, usage: { type: 'duration', seconds: 1 } });
          });
        }
      } else if (this.protocol === 'sarvam') {
        if (m.type === 'audio_input') bytes += Buffer.from(m.audio, 'base64').length;
        else if (m.type === 'flush') {
          answer(() => {
            json({ type: 'transcript.partial', utterance_idx: item, text: words()[0] });
            json({ type: 'transcript.final', utterance_idx: item++, text: this.text });
          });
        }
      } else if (m.type === 'Finalize') {
        const w = words();
        const half = Math.ceil(w.length / 2);
        const results = (text: string, fromFinalize: boolean) => ({ type: 'Results', channel_index: [0, 1], is_final: true, speech_final: fromFinalize, from_finalize: fromFinalize, channel: { alternatives: [{ transcript: text, confidence: 0.9, words: [] }] } });
        answer(() => {
          json(results(w.slice(0, half).join(' '), false));
          json(results(w.slice(half).join(' '), true));
        });
      }
    });
  }

  async close(): Promise<void> {
    for (const ws of this.sockets) ws.terminate();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
