// One transcription job: its facts, re-read while it runs; once completed, the transcript as speaker
// turns (consecutive segments of one speaker), each with its times, which plays that span of the
// recording when clicked (GET …/audio, which the <audio> element reads by byte ranges); speakers
// renamed here, in this page only (the transcript and the downloads keep SPEAKER_00…); downloads
// as the API renders them (text, SRT, WebVTT, the job's JSON). A failed job shows its error.
import { useRef, useState } from 'preact/hooks';
import { useSession } from '../../ui/context.tsx';
import { Loading, Page, unix, useLoad, usePoll } from '../../ui/components.tsx';
import { clock } from '../../ui/speech.tsx';
import { running, type Job } from './jobs.tsx';

interface Turn {
  speaker: string;
  start: number;
  end: number;
  text: string;
}

/** Consecutive segments of one speaker, as one turn. */
function turnsOf(segments: NonNullable<Job['segments']>): Turn[] {
  const out: Turn[] = [];
  for (const s of segments) {
    const last = out.at(-1);
    if (last && last.speaker === s.speaker) {
      last.end = s.end;
      last.text += ` ${s.text}`;
    } else out.push({ ...s });
  }
  return out;
}

const DOWNLOADS: [string, string][] = [
  ['text', 'txt'],
  ['srt', 'srt'],
  ['vtt', 'vtt'],
  ['json', 'json'],
];

export function JobPage({ id }: { id: string }) {
  const { api } = useSession();
  const path = `/portal/transcription/jobs/${encodeURIComponent(id)}`;
  const job = useLoad(() => api.get<Job>(path), [path]);
  usePoll(job.data !== null && running(job.data) ? 2000 : null, job.reload);
  const j = job.data;
  return (
    <Page title={`Transcription ${id}`}>
      <Loading loaded={job} />
      {j ? (
        <>
          <dl class="facts card">
            <dt>Status</dt>
            <dd data-testid="job-status">{j.status}</dd>
            <dt>Model</dt>
            <dd>{j.model}</dd>
            <dt>Created</dt>
            <dd>{unix(j.created_at)}</dd>
            <dt>Finished</dt>
            <dd>{unix(j.completed_at)}</dd>
            {j.duration !== undefined ? (
              <>
                <dt>Length</dt>
                <dd>{clock(j.duration)}</dd>
                <dt>Language</dt>
                <dd>{j.language}</dd>
              </>
            ) : null}
          </dl>
          {j.error ? (
            <div class="error" role="alert">
              <strong>{j.error.message}</strong> <span class="muted">({j.error.code})</span>
            </div>
          ) : null}
          {j.status === 'completed' && j.segments ? <Transcript job={j} path={path} segments={j.segments} /> : null}
        </>
      ) : null}
    </Page>
  );
}

function Transcript({ job, path, segments }: { job: Job; path: string; segments: NonNullable<Job['segments']> }) {
  const audio = useRef<HTMLAudioElement>(null);
  const stopAt = useRef<number | null>(null);
  const [playing, setPlaying] = useState<number | null>(null);
  const [names, setNames] = useState<Record<string, string>>({});
  const turns = turnsOf(segments);
  const speakers = [...new Set(turns.map((t) => t.speaker))];
  const nameOf = (s: string) => names[s]?.trim() || s;
  const play = (t: Turn, i: number) => {
    const a = audio.current;
    if (!a) return;
    a.currentTime = t.start;
    stopAt.current = t.end;
    setPlaying(i);
    a.play().catch(() => setPlaying(null)); // the browser may refuse sound; the position is still set
  };
  return (
    <>
      <section class="card">
        <h2>Recording</h2>
        {/* biome-ignore lint/a11y/useMediaCaption: the transcript below is the recording's text, segment by segment */}
        <audio
          ref={audio}
          controls
          preload="metadata"
          src={`${path}/audio`}
          aria-label="The recording"
          onTimeUpdate={() => {
            const a = audio.current!;
            if (stopAt.current !== null && a.currentTime >= stopAt.current) {
              a.pause();
              stopAt.current = null;
            }
          }}
          onPause={() => setPlaying(null)}
        />
        <p class="actions">
          Download:
          {DOWNLOADS.map(([format, ext]) => (
            <a key={format} href={`${path}?response_format=${format}`} download={`${job.id}.${ext}`}>
              {ext.toUpperCase()}
            </a>
          ))}
        </p>
      </section>
      <section class="card">
        <h2>Speakers</h2>
        <p class="muted">Names given here stay in this page; the transcript and its downloads keep the labels.</p>
        <div class="filters">
          {speakers.map((s) => (
            <label key={s} class="field">
              <span>Name for {s}</span>
              <input value={names[s] ?? ''} placeholder={s} maxLength={60} onInput={(e) => setNames({ ...names, [s]: e.currentTarget.value })} />
            </label>
          ))}
        </div>
      </section>
      <section class="card">
        <h2>Transcript</h2>
        <ol class="turns" data-testid="turns">
          {turns.map((t, i) => (
            <li key={i}>
              <button type="button" class={`turn${playing === i ? ' playing' : ''}`} data-start={t.start} data-end={t.end} onClick={() => play(t, i)}>
                <span class="who-said">{nameOf(t.speaker)}</span>
                <span class="muted">
                  {' '}
                  {clock(t.start)}–{clock(t.end)}
                </span>
                <span class="said">{t.text}</span>
              </button>
            </li>
          ))}
        </ol>
      </section>
    </>
  );
}
