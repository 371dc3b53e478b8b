// Writes config/speech/background-en.txt, the background of the offline recogniser's conversation
// models (src/speech/language-models.ts): the English training sentences of CLINC150 (Larson et al.
// 2019, "An Evaluation Dataset for Intent Classification and Out-of-Scope Prediction", CC BY 3.0:
// 150 intents of requests to an assistant, and out-of-scope ones), brought to the recogniser's words
// by corpus.ts, one per line, duplicates dropped. Run once by hand where the data set is:
//   npx tsx scripts/build-background-corpus.ts ../shared/datasets/clinc150/data_full.json
import { readFileSync, writeFileSync } from 'node:fs';
import { corpusLine } from '../src/speech/corpus.ts';

const source = process.argv[2];
if (!source) throw new Error('usage: build-background-corpus.ts <clinc150 data_full.json>');
const data = JSON.parse(readFileSync(source, 'utf8')) as Record<string, [string, string][]>;
const lines = new Set<string>();
for (const [text] of [...data.train!, ...data.oos_train!]) {
  const line = corpusLine(text);
  if (line) lines.add(line);
}
writeFileSync(new URL('../config/speech/background-en.txt', import.meta.url), `${[...lines].join('\n')}\n`);
console.log(`${lines.size} sentences`);
