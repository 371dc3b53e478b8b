// A two-speaker conversation of real recorded voices (the LibriVox reader from pocketsphinx-testdata
// and codec2-examples' hts1, taking turns three times each), assembled with ffmpeg by the
// diarization scripts' own code, as a 16 kHz WAV: what the jobs tests, and the dashboard's, upload.
import { mulberry32 } from '../../src/intent/classifier.ts';
import { assemble, wav } from '../../scripts/diarization/conversations.ts';
import { debianSpeakers, haveFfmpeg, SAMPLE_RATE, utterances } from '../../scripts/diarization/sources.ts';

const PAIR = ['librivox', 'hts1'];
const found = haveFfmpeg() ? debianSpeakers().filter((s) => PAIR.includes(s.id)) : [];

/** Why the conversation cannot be made here, or false. */
export const noConversation: string | false =
  found.length < 2 ? 'needs ffmpeg, pocketsphinx-testdata and codec2-examples (scripts/install-debian-packages.sh --test)' : false;

/** The conversation of `rounds` rounds (each speaker once a round): 3 rounds are ~24 s, 1 round ~8 s. */
export function conversationWav(rounds = 3): { bytes: Buffer; seconds: number } {
  const [a, b] = PAIR.map((id) => utterances(found.find((s) => s.id === id)!));
  const turns = Array.from({ length: rounds }, (_, i) => [a![i % a!.length]!, b![i % b!.length]!]).flat();
  const c = assemble('pair', turns, mulberry32(3));
  return { bytes: wav(c.pcm, SAMPLE_RATE), seconds: c.pcm.length / SAMPLE_RATE };
}
