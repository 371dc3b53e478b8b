// Try recognition: a clip recorded from the microphone (MediaRecorder, stopped at 30 s, the sync
// endpoint's limit) or picked from disk, transcribed by POST /portal/audio/transcriptions (the sync
// endpoint's fields and answer), with what it cost: the seconds it was billed at the model's price.
import { useEffect, useRef, useState } from 'preact/hooks';
import { useSession } from '../../ui/context.tsx';
import { ErrorBox, Field, Loading, Page, useAction } from '../../ui/components.tsx';
import { clock, fineCents, ModelSelect, useModels } from '../../ui/speech.tsx';

const MAX_SECONDS = 30;

interface Transcript {
  text: string;
  language?: string;
  duration?: number;
  usage: { type: 'duration'; seconds: number };
}

export function TryRecognitionPage() {
  const { api } = useSession();
  const models = useModels('stt');
  const [modelId, setModelId] = useState('');
  const [clip, setClip] = useState<Blob | null>(null);
  const [recording, setRecording] = useState(false);
  const [result, setResult] = useState<(Transcript & { centsPerMinute: number }) | null>(null);
  const recorder = useRef<MediaRecorder | null>(null);
  const act = useAction();
  // Leaving the page mid-recording stops it (and with it the microphone).
  useEffect(() => () => void (recorder.current?.state === 'recording' && recorder.current.stop()), []);
  const model = models.data?.find((m) => m.id === modelId) ?? models.data?.[0];

  const record = () =>
    act.run(async () => {
      const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
      const r = new MediaRecorder(stream);
      const parts: Blob[] = [];
      r.ondataavailable = (e) => parts.push(e.data);
      r.onstop = () => {
        stream.getTracks().forEach((t) => t.stop());
        setClip(new Blob(parts, { type: r.mimeType || 'audio/webm' }));
        setRecording(false);
      };
      recorder.current = r;
      setClip(null);
      setResult(null);
      r.start();
      setRecording(true);
      setTimeout(() => r.state === 'recording' && r.stop(), MAX_SECONDS * 1000);
    });

  const transcribe = () =>
    act.run(async () => {
      const body = new FormData();
      body.set('model', model!.id);
      body.set('file', clip!, clip instanceof File ? clip.name : 'microphone.webm');
      const centsPerMinute = model!.pricing.cents_per_minute ?? 0;
      setResult({ ...(await api.send<Transcript>('POST', '/portal/audio/transcriptions', body)), centsPerMinute });
    });

  const seconds = result?.usage.seconds ?? 0;
  return (
    <Page title="Try recognition">
      <Loading loaded={models} />
      {models.data && !model ? <p class="muted">No speech-to-text model is active on your account.</p> : null}
      {model ? (
        <div class="card">
          <div class="filters">
            <ModelSelect models={models.data!} value={model.id} onChange={setModelId} />
            <Field label="Or pick a clip" hint={`Up to ${MAX_SECONDS} seconds.`}>
              <input
                type="file"
                accept="audio/*,.wav,.mp3,.ogg,.opus,.flac,.m4a,.webm"
                onChange={(e) => {
                  setClip(e.currentTarget.files?.[0] ?? null);
                  setResult(null);
                }}
              />
            </Field>
          </div>
          <p class="actions">
            {recording ? (
              <button type="button" onClick={() => recorder.current?.stop()}>
                Stop recording
              </button>
            ) : (
              <button type="button" onClick={() => void record()} disabled={act.busy}>
                Record from the microphone
              </button>
            )}
            <button type="button" class="primary" disabled={!clip || recording || act.busy} onClick={() => void transcribe()}>
              {act.busy && !recording ? 'Transcribing…' : 'Transcribe'}
            </button>
            <span class="muted">
              {recording ? 'Recording…' : clip ? `A clip of ${Math.round(clip.size / 1024)} KB is ready.` : ''} Priced at{' '}
              {fineCents(model.pricing.cents_per_minute ?? 0)} a minute, by the second.
            </span>
          </p>
        </div>
      ) : null}
      <ErrorBox error={act.error} />
      {result ? (
        <section class="card" aria-label="Transcript">
          <h2>Transcript</h2>
          <blockquote data-testid="recognized">{result.text || '(no speech heard)'}</blockquote>
          <p class="muted" data-testid="recognition-cost">
            {result.duration !== undefined ? `${clock(result.duration)} of audio, ` : ''}
            billed {seconds} s: {fineCents((seconds * result.centsPerMinute) / 60)}.
          </p>
        </section>
      ) : null}
    </Page>
  );
}
