// The engine's N-best files (pocketsphinx-engine.ts writes one per utterance with `-nbest`): read
// once the engine has printed the utterance's first best, removed after, and rescored by a client's
// bias (nbest.ts).
import { readFile, rm } from 'node:fs/promises';
import { type Bias, rescore, retime } from './nbest.ts';
import { type RawWord, spokenWord } from './pocketsphinx-output.ts';

/**
 * An utterance's words once its N-best file is rescored by the bias (nbest.ts), timed from the
 * first best; the first best itself when no hypothesis holds more of the context, or the file cannot be read (the engine writes it as it prints
 * the first best: looked for a few times).
 */
export async function biased(file: string, first: RawWord[], bias: Bias): Promise<RawWord[]> {
  const text = await readNbest(file);
  if (text === null) return first;
  const spoken = first.filter((w) => spokenWord(w.token) !== null);
  const words = rescore(
    text,
    bias,
    spoken.map((w) => spokenWord(w.token)!),
  );
  return words ? retime(spoken, words) : first;
}

/**
 * An utterance's N-best file, removed once read; null when it cannot be (the engine writes it as it
 * prints the first best: looked for a few times).
 */
export async function readNbest(file: string): Promise<string | null> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const text = await readFile(file, 'utf8').catch(() => '');
    if (text.endsWith('\n')) {
      void rm(file, { force: true });
      return text;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  return null;
}
