// The realtime socket's context: `input_audio_transcription.prompt` and `key_terms` (the gateway's
// extension) in a session update reach the recogniser: an upstream streaming socket opens with
// them (OpenAI's `transcription_session.update` prompt, Deepgram's `keyterm` query) and is sent a
// change of them before the next commit (OpenAI's session update, Deepgram's `Configure`), and in
// utterance mode each utterance goes with those set when it was committed. Bad key terms are an
// `error` frame naming the field; the session frames show what is set.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, call } from '../helper.ts';
import { readForm } from '../fakes/audio.ts';
import type { FakeServer } from '../fakes/fake-server.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import { FakeRealtimeUpstream } from '../fakes/realtime-upstreams.ts';
import { closedSession, connect, encode, fundedGateway, skipSpeech, speech16k, to8k, type Client, type Funded } from './helpers.ts';

const COMPLETED = 'conversation.item.input_audio_transcription.completed';
const model = (routes: object[]) => ({ type: 'stt', owned_by: 'acme', languages: ['en-US'], streaming: true, pricing: { cents_per_minute: 0.6 }, routes });

function sendMulaw(c: Client): void {
  const bytes = encode(to8k(speech16k(1, 1.5)), 'mulaw');
  for (let at = 0; at < bytes.length; at += 800) c.ws.send(bytes.subarray(at, at + 800));
}

const update = (transcription: object) => ({ type: 'transcription_session.update', session: { input_audio_transcription: transcription } });

describe('realtime socket: prompt and key_terms reach the recogniser', { skip: skipSpeech }, () => {
  let f: Funded;
  let openaiRt: FakeRealtimeUpstream;
  let deepgramRt: FakeRealtimeUpstream;
  let openaiRest: FakeServer;
  const put = async (id: string, body: object) => {
    const res = await call(f.gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body });
    assert.ok(res.status < 300, res.text);
  };
  const rt = (fake: FakeRealtimeUpstream, upstreamModel: string) => ({
    provider: fake.protocol,
    base_url: fake.baseUrl,
    api_key: 'up-key',
    upstream_model: upstreamModel,
    realtime: true,
  });

  before(async () => {
    f = await fundedGateway();
    openaiRt = await FakeRealtimeUpstream.start('openai');
    deepgramRt = await FakeRealtimeUpstream.start('deepgram');
    openaiRest = await startOpenAIUpstream({ apiKey: 'sk-up' });
    await put('stt-openai-rt', model([rt(openaiRt, 'gpt-4o-transcribe')]));
    await put('stt-nova3-rt', model([rt(deepgramRt, 'nova-3')]));
    await put('stt-whisper-utt', model([{ provider: 'openai', base_url: `${openaiRest.url}/v1`, api_key: 'sk-up', upstream_model: 'whisper-1' }]));
  });
  after(async () => {
    await f?.gw.destroy();
    await openaiRt?.close();
    await deepgramRt?.close();
    await openaiRest?.close();
  });

  it('OpenAI Realtime: the socket opens with the prompt, key terms folded in; session.updated shows both', async () => {
    const c = await connect(f.gw.url, { model: 'stt-openai-rt', sample_rate: '8000', encoding: 'mulaw', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    c.send(update({ prompt: 'Was the amount debited?', key_terms: ['ATM', 'debited'] }));
    const updated = (await c.next('transcription_session.updated')).session;
    assert.equal(updated.input_audio_transcription.prompt, 'Was the amount debited?');
    assert.deepEqual(updated.input_audio_transcription.key_terms, ['ATM', 'debited']);
    sendMulaw(c);
    await c.next(COMPLETED);
    assert.equal(openaiRt.sessionUpdates.at(-1).input_audio_transcription.prompt, 'Was the amount debited?\nATM, debited');
    // Changed after the socket opened: a session update on the same socket before the next commit.
    const connections = openaiRt.connections;
    c.send(update({ prompt: 'And the amount?', key_terms: [] }));
    await c.until((fr) => fr.filter((x) => x.type === 'transcription_session.updated').length >= 2, 5000, 'second update');
    sendMulaw(c);
    await c.until((fr) => fr.filter((x) => x.type === COMPLETED).length >= 2, 15_000, 'second utterance');
    assert.deepEqual(openaiRt.sessionUpdates.at(-1), { input_audio_transcription: { model: 'gpt-4o-transcribe', prompt: 'And the amount?' } });
    assert.equal(openaiRt.connections, connections, 'no new socket');
    c.ws.close();
    await closedSession(f.gw, created.session.id);
  });

  it('Deepgram live (Nova-3): the socket opens with a `keyterm` per term', async () => {
    const c = await connect(f.gw.url, { model: 'stt-nova3-rt', sample_rate: '8000', encoding: 'mulaw', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    c.send(update({ key_terms: ['two thousand rupees', 'UPI'] }));
    await c.next('transcription_session.updated');
    sendMulaw(c);
    await c.next(COMPLETED);
    assert.deepEqual(deepgramRt.queries.at(-1)!.getAll('keyterm'), ['two thousand rupees', 'UPI']);
    // Changed mid-stream: Nova-3's Configure replaces them on the same socket.
    c.send(update({ key_terms: ['NEFT'] }));
    await c.until((fr) => fr.filter((x) => x.type === 'transcription_session.updated').length >= 2, 5000, 'second update');
    sendMulaw(c);
    await c.until((fr) => fr.filter((x) => x.type === COMPLETED).length >= 2, 15_000, 'second utterance');
    assert.deepEqual(deepgramRt.configures.at(-1), { type: 'Configure', keyterms: ['NEFT'] });
    assert.equal(deepgramRt.connections, 1);
    c.ws.close();
    await closedSession(f.gw, created.session.id);
  });

  it('utterance mode: each utterance goes with the prompt set when it was committed', async () => {
    const c = await connect(f.gw.url, { model: 'stt-whisper-utt', sample_rate: '8000', encoding: 'mulaw', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    assert.equal(created.session.recognition, 'utterance');
    const sent = openaiRest.requests.length;
    c.send(update({ prompt: 'first question' }));
    await c.next('transcription_session.updated');
    sendMulaw(c);
    await c.next(COMPLETED);
    c.send(update({ prompt: null, key_terms: ['Dashwood'] }));
    await c.until((fr) => fr.filter((x) => x.type === 'transcription_session.updated').length >= 2, 5000, 'second update');
    sendMulaw(c);
    await c.until((fr) => fr.filter((x) => x.type === COMPLETED).length >= 2, 15_000, 'second utterance');
    const prompts = await Promise.all(
      openaiRest.requests.slice(sent).map(async (r) => (await readForm(r.raw, r.headers['content-type']))!.fields.get('prompt')?.[0]),
    );
    assert.deepEqual(prompts, ['first question', 'Dashwood']);
    c.ws.close();
    await closedSession(f.gw, created.session.id);
  });

  it('stt-local (streaming): the prompt set when an utterance is committed favours the words it names; the next utterance without one is heard without', async () => {
    const c = await connect(f.gw.url, { model: 'stt-local', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    const send = () => c.append(encode(speech16k(1, 1.5), 'pcm_s16le'), 32000);
    c.send(update({ prompt: 'He was ill disposed.' }));
    await c.next('transcription_session.updated');
    send();
    const first = await c.next(COMPLETED);
    assert.match(first.transcript, /ill disposed young man/, `with the prompt: "${first.transcript}"`);
    c.send(update({ prompt: null }));
    await c.until((fr) => fr.filter((x) => x.type === 'transcription_session.updated').length >= 2, 5000, 'second update');
    send();
    await c.until((fr) => fr.filter((x) => x.type === COMPLETED).length >= 2, 15_000, 'second utterance');
    assert.doesNotMatch(c.of(COMPLETED)[1]!.transcript, /ill disposed/, 'without it');
    c.ws.close();
    await closedSession(f.gw, created.session.id);
  });

  it('bad key terms are an error frame naming the field; the rest of the update applies', async () => {
    const c = await connect(f.gw.url, { model: 'stt-whisper-utt', sample_rate: '8000', encoding: 'mulaw', api_key: f.apiKey });
    const created = await c.next('transcription_session.created');
    c.send({ ...update({ prompt: 'kept', key_terms: ['ok', 'x'.repeat(51)] }), event_id: 'event_bad' });
    const err = (await c.next('error')).error;
    assert.equal(err.param, 'session.input_audio_transcription.key_terms');
    assert.equal(err.event_id, 'event_bad');
    assert.match(err.message, /at most 50 characters \(term 2\)/);
    const updated = (await c.next('transcription_session.updated')).session;
    assert.equal(updated.input_audio_transcription.prompt, 'kept');
    assert.equal(updated.input_audio_transcription.key_terms, undefined);
    c.send({ type: 'session.update', session: { type: 'transcription', audio: { input: { transcription: { key_terms: 'ATM' } } } } });
    await c.until((fr) => fr.filter((x) => x.type === 'error').length >= 2, 5000, 'second error');
    assert.equal(c.of('error')[1]!.error.param, 'session.audio.input.transcription.key_terms');
    c.ws.close();
    await closedSession(f.gw, created.session.id);
  });
});
