// Try speech: a text, a tts model and one of its voices, and what it will cost before it is sent
// (its characters at the model's price per 1,000); then POST /portal/audio/speech as raw 24 kHz PCM,
// played through Web Audio as it streams in (each chunk scheduled right after the one before), so the
// first words sound before the rest is synthesized.
import { useEffect, useRef, useState } from 'preact/hooks';
import { useSession } from '../../ui/context.tsx';
import { ErrorBox, Field, Loading, Page, useAction } from '../../ui/components.tsx';
import { fineCents, ModelSelect, useModels } from '../../ui/speech.tsx';

const RATE = 24000;

export function TrySpeechPage() {
  const { api } = useSession();
  const models = useModels('tts');
  const [modelId, setModelId] = useState('');
  const [voice, setVoice] = useState('');
  const [text, setText] = useState('Hello! This is the gateway speaking.');
  const [heard, setHeard] = useState<{ seconds: number; done: boolean } | null>(null);
  const ctx = useRef<AudioContext | null>(null);
  const act = useAction();
  useEffect(() => () => void ctx.current?.close(), []); // leaving the page silences it
  const model = models.data?.find((m) => m.id === modelId) ?? models.data?.[0];
  const voices = model?.voices ?? [];
  const chosen = voices.includes(voice) ? voice : (voices[0] ?? '');
  const characters = [...text].length;
  const price = model ? (characters * (model.pricing.cents_per_1k_chars ?? 0)) / 1000 : 0;

  const speak = () =>
    act.run(async () => {
      setHeard(null);
      // Made on the click (a user gesture), so the browser lets it sound.
      const audio = (ctx.current ??= new AudioContext({ sampleRate: RATE }));
      await audio.resume();
      const res = await api.raw('POST', '/portal/audio/speech', { model: model!.id, voice: chosen, input: text, response_format: 'pcm', sample_rate: RATE });
      const reader = res.body!.getReader();
      let at = audio.currentTime + 0.05;
      let samples = 0;
      let carry: Uint8Array | null = null; // an odd byte left between chunks
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const bytes: Uint8Array = carry ? concat(carry, value) : value;
        const whole = bytes.length - (bytes.length % 2);
        carry = whole < bytes.length ? bytes.slice(whole) : null;
        if (whole === 0) continue;
        const view = new DataView(bytes.buffer, bytes.byteOffset, whole);
        const buffer = audio.createBuffer(1, whole / 2, RATE);
        const out = buffer.getChannelData(0);
        for (let i = 0; i < out.length; i++) out[i] = view.getInt16(i * 2, true) / 32768;
        const source = audio.createBufferSource();
        source.buffer = buffer;
        source.connect(audio.destination);
        at = Math.max(at, audio.currentTime);
        source.start(at);
        at += buffer.duration;
        samples += out.length;
        setHeard({ seconds: samples / RATE, done: false });
      }
      setHeard({ seconds: samples / RATE, done: true });
    });

  return (
    <Page title="Try speech">
      <Loading loaded={models} />
      {models.data && !model ? <p class="muted">No speech model is active on your account.</p> : null}
      {model ? (
        <form
          class="card"
          aria-label="Speak a text"
          onSubmit={(e) => {
            e.preventDefault();
            void speak();
          }}
        >
          <div class="filters">
            <ModelSelect models={models.data!} value={model.id} onChange={setModelId} />
            <Field label="Voice">
              <select name="voice" value={chosen} onChange={(e) => setVoice(e.currentTarget.value)}>
                {voices.map((v) => (
                  <option key={v} value={v}>
                    {v}
                  </option>
                ))}
              </select>
            </Field>
          </div>
          <Field label="Text">
            <textarea name="input" rows={4} maxLength={model.max_input_chars} value={text} onInput={(e) => setText(e.currentTarget.value)} />
          </Field>
          <p data-testid="speech-cost">
            {characters.toLocaleString('en-US')} characters, {fineCents(price)} at {fineCents(model.pricing.cents_per_1k_chars ?? 0)} per 1,000 characters,
            charged to your account.
          </p>
          <button type="submit" class="primary" disabled={act.busy || characters === 0}>
            {act.busy ? 'Speaking…' : 'Speak'}
          </button>
        </form>
      ) : null}
      <ErrorBox error={act.error} />
      {heard ? (
        <p role="status" data-testid="speech-heard">
          {heard.done ? 'Received' : 'Receiving'} {heard.seconds.toFixed(1)} s of audio.
        </p>
      ) : null}
    </Page>
  );
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
