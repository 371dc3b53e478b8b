// The floor for bench/realtime.ts: a bare `ws` relay doing only what no realtime gateway on this
// stack can skip: μ-law decode, WebRTC VAD with OpenAI's server_vad semantics, and each utterance
// sent to the same fake sync upstream as a WAV, its `completed` sent back. No key, no actor, no
// metering, no limits, no logs. Probes (`transcription_session.update`) are answered at once, as the
// gateway answers them. What the gateway costs above it is its own.
//
//   UPSTREAM=http://127.0.0.1:PORT node --import tsx bench/realtime-floor.ts   (prints "listening <url>")
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { g711Decode } from '../src/speech/g711.ts';
import { loadVoiceDetectors } from '../src/speech/vad.ts';
import { wavOf } from '../src/speech/wav.ts';

const upstream = process.env.UPSTREAM;
if (!upstream) throw new Error('UPSTREAM is required');
const detectors = await loadVoiceDetectors();
const server = createServer((_req, res) => res.writeHead(404).end());
const wss = new WebSocketServer({ server, perMessageDeflate: false, clientTracking: false });

wss.on('connection', (ws) => {
  const vad = detectors.create({ sampleRate: 8000 });
  const kept: Int16Array[] = []; // this session's audio since its last utterance (bounded by the VAD's turns)
  let total = 0;
  let first = 0;
  let item = 0;
  ws.send(JSON.stringify({ type: 'transcription_session.created' }));
  ws.on('message', (data, isBinary) => {
    if (!isBinary) return void ws.send(JSON.stringify({ type: 'transcription_session.updated' }));
    const samples = g711Decode('mulaw', data as Buffer);
    kept.push(samples);
    total += samples.length;
    for (const e of vad.push(samples)) {
      if (e.type === 'speech_started') {
        // Keep from the utterance's start only.
        const start = Math.round((e.audio_start_ms * 8000) / 1000);
        while (kept.length > 1 && first + kept[0]!.length <= start) first += kept.shift()!.length;
        continue;
      }
      const all = new Int16Array(total - first);
      let at = 0;
      for (const k of kept) all.set(k, at), (at += k.length);
      kept.length = 0;
      first = total;
      const id = `item_${++item}`;
      const form = new FormData();
      form.set('file', new Blob([wavOf(all, 8000)], { type: 'audio/wav' }), 'utterance.wav');
      form.set('model', 'whisper-1');
      form.set('response_format', 'verbose_json');
      fetch(`${upstream}/v1/audio/transcriptions`, { method: 'POST', body: form })
        .then((r) => r.json() as Promise<{ text: string }>)
        .then(
          (t) =>
            ws.readyState === ws.OPEN &&
            ws.send(JSON.stringify({ type: 'conversation.item.input_audio_transcription.completed', item_id: id, transcript: t.text })),
        )
        .catch(() => undefined);
    }
    if (!vad.inSpeech) {
      // Outside speech only the prefix padding and the detector's lag are needed.
      const keep = 8000; // 1 s
      while (kept.length > 1 && total - first - kept[0]!.length >= keep) first += kept.shift()!.length;
    }
  });
  ws.on('close', () => vad.destroy());
});

server.listen(0, '127.0.0.1', () => {
  const a = server.address() as { port: number };
  console.log(`listening ws://127.0.0.1:${a.port}`);
});
