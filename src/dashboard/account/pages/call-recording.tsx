// A call's recording on its page (GET /portal/voice/calls/{id}/recording, which the <audio> element
// reads by byte ranges): the player, the WAV and MP3 downloads, Delete (DELETE …/recording, after a
// confirmation; not shown to an organization's members, whom the API refuses), and what the call
// says of it while it is recorded, when nothing was, or once it is deleted. `useRecordingPlayer`
// lets the transcript play from a turn: the recording's time 0 is the call's answer, as the
// transcript's times are.
import { useRef, useState } from 'preact/hooks';
import type { Call } from './calls.tsx';
import { seconds } from './calls.tsx';
import { useSession } from '../../ui/context.tsx';
import { confirmed, ErrorBox, useAction } from '../../ui/components.tsx';
import { deletesRecordings } from '../../ui/roles.ts';

export interface RecordingPlayer {
  audio: { current: HTMLAudioElement | null };
  /** The turn playing now (its index), or null. */
  playing: number | null;
  /** Plays from `start` (seconds from the answer) to `end`, for turn `i`. */
  play(i: number, start: number, end: number): void;
  stop(): void;
  stopAt: { current: number | null };
}

export function useRecordingPlayer(): RecordingPlayer {
  const audio = useRef<HTMLAudioElement>(null);
  const stopAt = useRef<number | null>(null);
  const [playing, setPlaying] = useState<number | null>(null);
  return {
    audio,
    playing,
    stopAt,
    play(i, start, end) {
      const a = audio.current;
      if (!a) return;
      a.currentTime = start;
      stopAt.current = end;
      setPlaying(i);
      a.play().catch(() => setPlaying(null)); // the browser may refuse sound; the position is still set
    },
    stop: () => setPlaying(null),
  };
}

const STATUS: Record<string, string> = {
  recording: 'The call is being recorded: the recording is here once it ends.',
  none: 'The call was to be recorded, but nothing was (it was never answered, or its audio was lost).',
  deleted: 'The recording was deleted (on request, or at the end of its retention).',
};

export function CallRecording({ call: c, path, player, onDeleted }: { call: Call; path: string; player: RecordingPlayer; onDeleted(): void }) {
  const { api, me } = useSession();
  const del = useAction();
  const r = c.recording;
  if (!r) return null;
  const remove = () => {
    if (!confirmed(`Delete the recording of the call to ${c.to}? It cannot be undone; the transcript stays.`)) return;
    void del.run(async () => {
      await api.send('DELETE', `${path}/recording`);
      onDeleted();
    });
  };
  const src = `${path}/recording`;
  return (
    <section class="card">
      <h2>Recording</h2>
      {r.available ? (
        <>
          {/* biome-ignore lint/a11y/useMediaCaption: the transcript below is the recording's text, turn by turn */}
          <audio
            ref={player.audio}
            controls
            preload="metadata"
            src={src}
            aria-label="The call's recording"
            onTimeUpdate={(e) => {
              const a = e.currentTarget; // not player.audio: a last event may come once the element is gone (deleted)
              if (player.stopAt.current !== null && a.currentTime >= player.stopAt.current) {
                a.pause();
                player.stopAt.current = null;
              }
            }}
            onPause={player.stop}
          />
          <p class="muted" data-testid="recording-facts">
            {seconds(r.duration_seconds)} · the callee on the left channel, the agent on the right
            {r.expires_at ? ` · kept until ${new Date(r.expires_at * 1000).toISOString().slice(0, 10)}` : ''}
          </p>
          <p class="actions">
            Download:
            <a href={src} download={`${c.id}.wav`}>
              WAV
            </a>
            <a href={`${src}?format=mp3`} download={`${c.id}.mp3`}>
              MP3
            </a>
            {deletesRecordings(me) ? (
              <button type="button" class="danger" onClick={remove} disabled={del.busy}>
                Delete recording
              </button>
            ) : null}
          </p>
          <ErrorBox error={del.error} />
        </>
      ) : (
        <p class="muted" data-testid="recording-status">
          {STATUS[r.status] ?? r.status}
        </p>
      )}
    </section>
  );
}
