// WS /v1/audio/transcriptions/stream end to end through a real gateway, as an OpenAI realtime
// transcription client (`ws`, OpenAI's events): LibriVox speech through stt-local (pocketsphinx,
// streaming) at 16 kHz pcm_s16le and 8 kHz μ-law, server VAD committing by itself; manual commits
// with turn detection off; billing once on close, by the audio received.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lineNoise } from '../../src/speech/noise.ts';
import { closedSession, connect, encode, fundedGateway, localPrice, skipSpeech, speech16k, to8k, type Funded } from './helpers.ts';

const words = (t: string) => t.toLowerCase().split(/\s+/);

describe('realtime transcription over WebSocket (stt-local)', { skip: skipSpeech }, () => {
  let f: Funded;
  before(async () => {
    f = await fundedGateway();
  });
  after(async () => f?.gw.destroy());

  it('16 kHz pcm_s16le: server VAD commits the utterance, its transcript comes with times; billed once by the seconds received', async () => {
    const before = await f.balance();
    const c = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    assert.equal(created.request_id, c.upgradeHeaders['x-request-id']);
    assert.match(created.event_id, /^event_/);
    assert.equal(created.session.model, 'stt-local');
    assert.equal(created.session.sample_rate, 16000);
    assert.equal(created.session.input_audio_format, 'pcm16');
    assert.deepEqual(created.session.turn_detection, { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 });
    const audio = speech16k(1, 1.5);
    c.append(encode(audio, 'pcm_s16le'), 32000);
    const completed = await c.next('conversation.item.input_audio_transcription.completed');
    const started = c.of('input_audio_buffer.speech_started')[0]!;
    const stopped = c.of('input_audio_buffer.speech_stopped')[0]!;
    const committed = c.of('input_audio_buffer.committed')[0]!;
    assert.ok(started && stopped && committed, c.frames.map((x) => x.type).join(', '));
    assert.equal(started.item_id, completed.item_id);
    assert.equal(committed.item_id, completed.item_id);
    assert.equal(committed.previous_item_id, null);
    assert.ok(started.audio_start_ms >= 500 && started.audio_start_ms <= 1100, `speech from ${started.audio_start_ms} ms`);
    assert.ok(stopped.audio_end_ms >= 3900 && stopped.audio_end_ms <= 5000, `speech to ${stopped.audio_end_ms} ms`);
    const order = c.frames.map((x) => x.type);
    assert.ok(order.indexOf('input_audio_buffer.speech_started') < order.indexOf('input_audio_buffer.speech_stopped'));
    assert.ok(order.indexOf('input_audio_buffer.committed') < order.indexOf('conversation.item.input_audio_transcription.completed'));
    const delta = c.of('conversation.item.input_audio_transcription.delta')[0]!;
    assert.equal(delta.delta, completed.transcript);
    assert.equal(completed.content_index, 0);
    for (const w of ['was', 'not', 'young', 'man']) assert.ok(words(completed.transcript).includes(w), `"${completed.transcript}" has "${w}"`);
    assert.ok(completed.start >= 0.9 && completed.start < 1.5 && completed.end > 3.5 && completed.end <= 4.3, `times ${completed.start}–${completed.end}`);
    c.ws.close(1000);
    assert.equal(await c.closed, 1000);
    const view = await closedSession(f.gw, created.session.id);
    // 1 + 2.99 + 1.5 s = 5.49 s received → 6 s at 0.1 cent a minute, once.
    assert.equal(view.context.chargedSeconds, 6);
    assert.equal(before - (await f.balance()), localPrice(6));
  });

  it('8 kHz μ-law, sent as raw binary frames, transcribes the same words', async () => {
    const c = await connect(f.gw.url, { model: 'stt-local', sample_rate: '8000', encoding: 'mulaw' }, { authorization: `Bearer ${f.apiKey}` });
    const created = await c.next('transcription_session.created');
    assert.equal(created.session.input_audio_format, 'g711_ulaw');
    const bytes = encode(to8k(speech16k(1, 1.5)), 'mulaw');
    for (let at = 0; at < bytes.length; at += 800) c.ws.send(bytes.subarray(at, at + 800));
    const completed = await c.next('conversation.item.input_audio_transcription.completed');
    const heard = words(completed.transcript);
    assert.ok(['young', 'man', 'not'].filter((w) => heard.includes(w)).length >= 2, `"${completed.transcript}"`);
    c.ws.close();
    await closedSession(f.gw, created.session.id);
  });

  // Issue 39: the socket listens through the calls' detector; a rise of the line's noise (a -55 dBFS
  // hiss to -40 dBFS, 0.5 s before the speech) was speech for 3 s: the utterance began with the noise.
  it('line noise rising to -40 dBFS: one utterance, begun where the speech begins; 4 s of noise after it are none', async () => {
    const c = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    const audio = speech16k(1, 5);
    const [loud, hiss] = [lineNoise(-40, 'pink', 5).next(audio.length), lineNoise(-55, 'pink', 6).next(audio.length)];
    const noisy = audio.map((x, i) => Math.max(-32768, Math.min(32767, x + (i >= 8000 ? loud[i]! : hiss[i]!))));
    c.append(encode(noisy, 'pcm_s16le'), 32000);
    await c.next('conversation.item.input_audio_transcription.completed');
    await new Promise((r) => setTimeout(r, 500));
    const [started, stopped] = [c.of('input_audio_buffer.speech_started'), c.of('input_audio_buffer.speech_stopped')];
    assert.equal(c.of('input_audio_buffer.committed').length, 1, c.frames.map((x) => x.type).join(', '));
    assert.ok(started.length === 1 && started[0]!.audio_start_ms >= 500 && started[0]!.audio_start_ms <= 1100, `speech from ${started[0]?.audio_start_ms} ms`);
    assert.ok(stopped.length === 1 && stopped[0]!.audio_end_ms >= 3900 && stopped[0]!.audio_end_ms <= 5000, `speech to ${stopped[0]?.audio_end_ms} ms`);
    c.ws.close();
    await closedSession(f.gw, created.session.id);
  });

  it('turn detection off: nothing commits until the client does; an empty commit is an error frame and the session goes on', async () => {
    const c = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    c.send({ type: 'transcription_session.update', session: { turn_detection: null } });
    const updated = await c.next('transcription_session.updated');
    assert.equal(updated.session.turn_detection, null);
    c.send({ type: 'input_audio_buffer.commit', event_id: 'event_mine' });
    const err = await c.next('error');
    assert.equal(err.error.code, 'invalid_request');
    assert.equal(err.error.event_id, 'event_mine');
    c.append(encode(speech16k(0.5, 0.5), 'pcm_s16le'), 32000);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(c.of('input_audio_buffer.committed').length, 0);
    assert.equal(c.of('input_audio_buffer.speech_started').length, 0);
    c.send({ type: 'input_audio_buffer.commit' });
    const completed = await c.next('conversation.item.input_audio_transcription.completed');
    assert.ok(words(completed.transcript).includes('young'), completed.transcript);
    assert.ok(Math.abs(completed.start - 0.5) < 0.6, `start ${completed.start}`);
    c.ws.close();
    await closedSession(f.gw, created.session.id);
  });
});
