// Transcriptions: upload a recording (a file picked or dropped; model, language, speaker labels and
// a speaker count), which becomes a job (POST /portal/transcription/jobs, the /v1 jobs endpoint's
// fields and bill); and the account's jobs, newest first, paginated by the server, re-read every
// two seconds while any of them is still queued or processing (every five otherwise, so a job an
// API client starts shows up too).
import { useState } from 'preact/hooks';
import { useSession } from '../../ui/context.tsx';
import { ErrorBox, Field, Loading, Notice, Page, useAction, num, unix, usePoll } from '../../ui/components.tsx';
import { usePaged } from '../../ui/paged.tsx';
import { DataTable } from '../../ui/table.tsx';
import { href } from '../../ui/router.tsx';
import { ModelSelect, useModels, type ModelInfo } from '../../ui/speech.tsx';
import { MAX_UPLOAD_BYTES } from '../../ui/constants.ts';

/** A job as /portal/transcription/jobs answers it (the /v1 job object). */
export interface Job {
  id: string;
  status: 'queued' | 'processing' | 'completed' | 'failed';
  model: string;
  /** Unix seconds, as /v1/audio/transcriptions/jobs has them. */
  created_at: number;
  completed_at?: number | null;
  language?: string;
  duration?: number;
  segments?: { speaker: string; start: number; end: number; text: string }[];
  error?: { code: string; message: string };
}

export const running = (j: Job) => j.status === 'queued' || j.status === 'processing';

export function JobsPage() {
  const { list, pager } = usePaged<Job>('/portal/transcription/jobs');
  // Every 2 s while a listed job runs; every 5 s otherwise, for jobs a client of the API starts meanwhile.
  usePoll(list.data?.data.some(running) ? 2000 : 5000, list.reload);
  return (
    <Page title="Transcriptions">
      <Upload onQueued={list.reload} />
      <Loading loaded={list} />
      {list.data ? (
        <DataTable
          caption="Transcription jobs"
          testId="jobs"
          rows={list.data.data}
          rowKey={(j) => j.id}
          empty="No transcription jobs yet."
          columns={[
            { label: 'Job', cell: (j) => <a href={href(`jobs/${j.id}`)}>{j.id}</a> },
            { label: 'Status', cell: (j) => (j.error ? `${j.status}: ${j.error.message}` : j.status) },
            { label: 'Model', cell: (j) => j.model },
            { label: 'Created', cell: (j) => unix(j.created_at) },
            { label: 'Finished', cell: (j) => unix(j.completed_at) },
            { label: 'Audio seconds', num: true, cell: (j) => (j.duration === undefined ? '—' : num(Math.round(j.duration * 10) / 10)) },
          ]}
        />
      ) : null}
      {pager}
    </Page>
  );
}

function Upload({ onQueued }: { onQueued(): void }) {
  const { api } = useSession();
  const models = useModels('stt', (m) => m.jobs === true);
  const [modelId, setModelId] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [over, setOver] = useState(false);
  const [queued, setQueued] = useState<string | null>(null);
  const act = useAction();
  const list = models.data ?? [];
  const model: ModelInfo | undefined = list.find((m) => m.id === modelId) ?? list[0];
  if (models.data && !model) return <p class="muted">No model on your account runs transcription jobs.</p>;
  const submit = (e: Event & { currentTarget: HTMLFormElement }) => {
    e.preventDefault();
    const form = e.currentTarget;
    const fields = new FormData(form);
    void act.run(async () => {
      if (!file) throw new Error('Choose a recording first (or drop one on the form).');
      if (file.size > MAX_UPLOAD_BYTES) throw new Error(`${file.name} is ${Math.round(file.size / 1048576)} MB; a recording may be 25 MB at most.`);
      const body = new FormData();
      body.set('model', model!.id);
      const language = String(fields.get('language') ?? '');
      if (language) body.set('language_code', language);
      body.set('diarize', fields.get('diarize') ? 'true' : 'false');
      const speakers = String(fields.get('num_speakers') ?? '');
      if (speakers) body.set('num_speakers', speakers);
      body.set('file', file, file.name);
      const job = await api.send<Job>('POST', '/portal/transcription/jobs', body);
      setQueued(job.id);
      setFile(null);
      form.reset();
      onQueued();
    });
  };
  return (
    <form
      class={`card drop${over ? ' over' : ''}`}
      aria-label="New transcription"
      onSubmit={submit}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        const dropped = e.dataTransfer?.files[0];
        if (dropped) setFile(dropped);
      }}
    >
      <h2>Transcribe a recording</h2>
      <Loading loaded={models} />
      {model ? (
        <>
          <Field
            label="Recording"
            hint={file ? `${file.name}, ${num(Math.round(file.size / 1024))} KB` : 'Pick a file, or drop one anywhere on this form (up to 25 MB, 10 hours).'}
          >
            <input
              name="file"
              type="file"
              accept="audio/*,.wav,.mp3,.ogg,.opus,.flac,.m4a,.webm"
              onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)}
            />
          </Field>
          <div class="filters">
            <ModelSelect models={list} value={model.id} onChange={setModelId} />
            <Field label="Language">
              <select name="language">
                <option value="">The model's default</option>
                {(model.languages ?? []).map((l) => (
                  <option key={l} value={l}>
                    {l}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Speakers (a hint)">
              <input name="num_speakers" type="number" min={1} max={20} placeholder="any" />
            </Field>
            <label class="check">
              <input type="checkbox" name="diarize" defaultChecked={model.diarization === true} disabled={model.diarization !== true} /> Label speakers
            </label>
          </div>
          <button type="submit" class="primary" disabled={act.busy}>
            {act.busy ? 'Uploading…' : 'Upload and transcribe'}
          </button>
        </>
      ) : null}
      <ErrorBox error={act.error} />
      {queued ? (
        <Notice>
          Job <a href={href(`jobs/${queued}`)}>{queued}</a> is queued; the list below follows it.
        </Notice>
      ) : null}
    </form>
  );
}
