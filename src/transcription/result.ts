// From a provider's transcript to the one clients get: the gateway's own duration (decoded), a
// BCP-47 language, trimmed texts, and speakers renamed SPEAKER_00, SPEAKER_01… by first appearance
// whatever the provider called them (integers, letters, names), consistent over the recording.
import type { Transcript as UpstreamTranscript } from '../providers/types.ts';
import { canonicalLanguage } from '../speech/languages.ts';
import type { Transcript } from '../speech/transcript.ts';

export const speakerLabel = (n: number): string => `SPEAKER_${String(n).padStart(2, '0')}`;

/**
 * Every segment gets a speaker label: the provider's speakers in order of appearance when `diarized`
 * (SPEAKER_00 for all when it gave none), SPEAKER_00 for all when not.
 */
export function transcriptForClient(
  t: UpstreamTranscript,
  opts: { durationS: number; language: string | null; diarized: boolean; decoder?: boolean },
): Transcript {
  const labels = new Map<string, string>();
  const labelOf = (raw: string | number | null | undefined): string => {
    const key = raw === null || raw === undefined ? '' : String(raw);
    let label = labels.get(key);
    if (!label) {
      label = speakerLabel(labels.size);
      labels.set(key, label);
    }
    return label;
  };
  const segments = t.segments
    .filter((s) => s.text.trim() !== '')
    .map((s) => ({
      start: round3(s.start),
      end: round3(Math.min(s.end, opts.durationS)),
      text: s.text.trim(),
      ...(s.words ? { words: s.words.map((w) => ({ word: w.word, start: round3(w.start), end: round3(w.end) })) } : {}),
      // A Whisper upstream's decoder fields, for verbose_json (sync only: a job's segments do not show them).
      ...(opts.decoder && s.decoder ? s.decoder : {}),
      // The spec's job segments always name a speaker: one speaker when diarization was not asked for.
      speaker: opts.diarized ? labelOf(s.speaker) : speakerLabel(0),
    }));
  // The provider's language, in the request's (or model's) regional form when it is the same language.
  const said = t.language ? canonicalLanguage(t.language) : null;
  const asked = opts.language ? canonicalLanguage(opts.language) : null;
  const language = said && asked && said.split('-')[0] === asked.split('-')[0] ? asked : (said ?? asked ?? 'und');
  return { text: t.text.trim() || segments.map((s) => s.text).join(' '), language, duration: round3(opts.durationS), segments };
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;
