// The offline recogniser's language models for a conversation (issue 40): a domain (an intent pack's
// sentences) becomes a trigram model that expects what callers of that pack say and still decodes
// anything else, plus one per expectation (a yes or no, an amount, digits) for the utterance after a
// question of that shape. The resident engines load them all beside the general model and pick one
// per utterance (pocketsphinx-engine.ts: `-lmctl`, `-lmnamectl`).
//
// How a model is made, and why (docs/speech-engines.md has the figures):
// - Debian's irstlm (`tlm`, Witten-Bell, trigrams) over one text: the domain's sentences repeated
//   (their weight), the expected phrases, and a background of everyday requests to an assistant
//   (config/speech/background-en.txt: CLINC150's training sentences, CC BY 3.0), so speech outside
//   the pack still comes out as words ("what is the weather today"), not as the pack's nearest
//   sentence. The general model cannot be mixed in: Debian ships it only in binary and its
//   converter fails on it, and its 2 million bigrams would take far longer than the budget.
// - Words the general dictionary lacks ("paise", "nahi") get a pronunciation from festival's US
//   lexicon and letter-to-sound rules (phones of the CMU set, as the acoustic model's); the words
//   reach festival's Scheme reader only after corpus.ts made them `[a-z']+`.
// - A domain's models are built once per content (its key), in the background: until they are
//   ready, its utterances use the general model. Four tlm runs, two at a time: about a second.
// - With a cache folder (`transcription.languageModelCacheDir`), what tlm and festival made is kept
//   there by the content they were given (sha-256 of it), written under a temporary name and renamed:
//   the same domain built again, by this process after a restart or by another on the host, is
//   copied from it (~2 s of CPU saved each time: the test suite's gateways share one).
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { corpusLine, EXPECTATIONS, expectedPhrases, withApostrophe, type Expectation } from './corpus.ts';
import { DEFAULT_MODEL_DIR, GENERAL_MODEL, type ModelSet } from './pocketsphinx-engine.ts';

export { GENERAL_MODEL, type ModelSet };
import { spawnTool } from './process.ts';

/** A conversation's domain: the sentences its callers say (a pack's examples). */
export interface SpeechDomain {
  /** Names the content: another key is another domain (a pack's id, version and hash). */
  key: string;
  sentences: readonly string[];
}

export interface LanguageModelsOptions {
  /** Where models are written (the gateway's tmp area: they live as long as the process). */
  dir: string;
  log?: Logger;
  modelDir?: string;
  tlm?: string;
  festival?: string;
  /** Background sentences, one per line: config/speech/background-en.txt (`backgroundFile` in config.ts). */
  backgroundFile: string;
  /** Where built models and pronunciations are kept by content, for any later build of the same (absent: none kept). */
  cacheDir?: string;
  /** How often each part is repeated (default WEIGHTS; `npm run eval:understanding -- --weights` tries others). */
  weights?: Partial<typeof WEIGHTS>;
}

/**
 * How often each part is repeated in a model's text, measured by `npm run eval:understanding`: the
 * pack's sentences in the open model, the expected phrases in it and in their own models, and the
 * pack's sentences in those (a yes/no model with them ×30 heard 70 % of the answers right, ×3 75 %,
 * ×1 80 %: the pack's words crowd out a short answer).
 */
export const WEIGHTS = { domain: 30, expectedOpen: 3, expected: 300, domainExpected: 1 };
const DEFAULT_TLM = '/usr/lib/irstlm/bin/tlm';
/** Festival's phones that the CMU set spells otherwise (its `radio` phone set). */
const PHONES: Record<string, string> = { ax: 'AH', axr: 'ER', dx: 'D', el: 'AH L', em: 'AH M', en: 'AH N', ix: 'IH', hv: 'HH', nx: 'N' };

export class LanguageModels {
  private set: ModelSet | null = null;
  private readonly built = new Map<string, Promise<string | null>>(); // key → model name prefix, null: failed
  private readonly ready = new Map<string, string>(); // key → model name prefix, once built
  private readonly models: { name: string; path: string }[] = [];
  private readonly extraWords = new Map<string, string>();
  private dictionary: Set<string> | null = null;
  private generation = 0;

  constructor(private readonly opts: LanguageModelsOptions) {}

  /** The models for `domain`, built once per key; resolves when they are ready (false: building failed, logged). */
  prepare(domain: SpeechDomain): Promise<boolean> {
    let building = this.built.get(domain.key);
    if (!building) {
      building = this.build(domain).catch((err: unknown) => {
        this.opts.log?.warn({ err, domain: domain.key }, 'could not build the language models of a speech domain; its utterances use the general model');
        return null;
      });
      this.built.set(domain.key, building);
    }
    return building.then((name) => name !== null);
  }

  /** The model for an utterance of `key`'s domain expecting `expect`; null when not built (yet): the general model. */
  modelFor(key: string | undefined, expect: string | null | undefined): string | null {
    const prefix = key === undefined ? undefined : this.ready.get(key);
    if (prefix === undefined) return null;
    // An expectation without a model of its own (a date) is heard with the domain's open model.
    return `${prefix}-${EXPECTATIONS.includes(expect as Expectation) ? expect : 'open'}`;
  }

  /**
   * As modelFor, but a domain still being built is waited for, up to `waitMs` (a call's first
   * utterance may come before its pack's first build ends: a second of waiting once, not a call
   * decoded without its models).
   */
  async modelWhenReady(key: string | undefined, expect: string | null | undefined, waitMs: number): Promise<string | null> {
    const building = key === undefined ? undefined : this.built.get(key);
    if (building && !this.ready.has(key!)) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([building, new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
      clearTimeout(timer);
    }
    return this.modelFor(key, expect);
  }

  /** The set the engines start with (the general model alone until a domain is built). */
  current(): ModelSet | null {
    return this.set;
  }

  private words(): Set<string> {
    if (!this.dictionary) {
      const dir = this.opts.modelDir ?? DEFAULT_MODEL_DIR;
      this.dictionary = new Set(
        readFileSync(join(dir, 'cmudict-en-us.dict'), 'utf8')
          .split('\n')
          .map((l) => l.slice(0, l.indexOf(' ')).replace(/\(\d+\)$/, '')),
      );
    }
    return this.dictionary;
  }

  private async build(domain: SpeechDomain): Promise<string> {
    const weights = { ...WEIGHTS, ...this.opts.weights };
    const known = this.words();
    const spell = (line: string) =>
      line
        .split(' ')
        .map((w) => withApostrophe(w, (x) => known.has(x)))
        .join(' ');
    const lines = (texts: readonly string[]) =>
      texts
        .map(corpusLine)
        .filter((l): l is string => l !== null)
        .map(spell);
    const sentences = lines(domain.sentences);
    const expected = Object.fromEntries(EXPECTATIONS.map((e) => [e, lines(expectedPhrases(e))])) as Record<Expectation, string[]>;
    const background = (await readFile(this.opts.backgroundFile, 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => `<s> ${l} </s>`)
      .join('\n');
    const prefix = `d${createHash('sha256').update(domain.key).digest('hex').slice(0, 12)}`;
    const dir = join(this.opts.dir, 'language-models', prefix);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const text = (parts: [string[], number][]) =>
      `${parts.flatMap(([ls, times]) => Array.from({ length: times }, () => ls.map((l) => `<s> ${l} </s>`).join('\n'))).join('\n')}\n${background}\n`;
    const specs: { name: string; text: string }[] = [
      { name: 'open', text: text([[sentences, weights.domain], ...EXPECTATIONS.map((e) => [expected[e], weights.expectedOpen] as [string[], number])]) },
      ...EXPECTATIONS.map((e) => ({
        name: e,
        text: text([
          [expected[e], Math.max(1, Math.round(weights.expected / Math.max(1, expected[e].length / 30)))],
          [sentences, weights.domainExpected],
        ]),
      })),
    ];
    const paths = new Map<string, string>();
    for (let i = 0; i < specs.length; i += 2) {
      await Promise.all(
        specs.slice(i, i + 2).map(async (s) => {
          const path = join(dir, `${s.name}.arpa`);
          const kept = this.kept(`tlm -n=3 -lm=wb\n${s.text}`, 'arpa');
          if (!(kept && (await copied(kept, path)))) {
            await this.tlm(join(dir, `${s.name}.txt`), s.text, path);
            if (kept) await this.keep(kept, (tmp) => copyFile(path, tmp));
          }
          paths.set(s.name, path);
        }),
      );
    }
    const unknown = [...new Set([...sentences, ...Object.values(expected).flat()].flatMap((l) => l.split(' ')))].filter(
      (w) => !known.has(w) && !this.extraWords.has(w),
    );
    for (const [word, phones] of await this.pronunciations(unknown)) this.extraWords.set(word, phones);
    for (const s of specs) this.models.push({ name: `${prefix}-${s.name}`, path: paths.get(s.name)! });
    await this.publish();
    this.ready.set(domain.key, prefix);
    return prefix;
  }

  /** Runs irstlm's tlm on `text` (written to `txt`, removed after) into the ARPA file `out`. */
  private async tlm(txt: string, text: string, out: string): Promise<void> {
    await writeFile(txt, text, { mode: 0o600 });
    try {
      const run = spawnTool(this.opts.tlm ?? DEFAULT_TLM, [`-tr=${txt}`, '-n=3', '-lm=wb', `-o=${out}`], { stdin: 'ignore' });
      const exit = await run.exited;
      if (exit.spawnError) throw exit.spawnError;
      if (exit.code !== 0) throw new Error(`irstlm tlm failed (exit ${exit.code ?? exit.signal}): ${run.stderr().trim().split('\n').at(-1) ?? ''}`);
    } finally {
      await rm(txt, { force: true });
    }
  }

  /** The cache's file for `content` (null: no cache). */
  private kept(content: string, ext: string): string | null {
    const dir = this.opts.cacheDir;
    return dir ? join(dir, `${createHash('sha256').update(content).digest('hex')}.${ext}`) : null;
  }

  /** Writes `file` of the cache through `write` to a temporary name, then renames it: readers see all of it or nothing. */
  private async keep(file: string, write: (tmp: string) => Promise<void>): Promise<void> {
    const tmp = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
    try {
      await mkdir(this.opts.cacheDir!, { recursive: true, mode: 0o700 });
      await write(tmp);
      await rename(tmp, file);
    } catch (err) {
      this.opts.log?.warn({ err }, 'could not keep a language model in the cache: it is built again next time');
      await rm(tmp, { force: true });
    }
  }

  /** pronounce, through the cache: festival is asked only for words it was not asked for before. */
  private async pronunciations(words: string[]): Promise<Map<string, string>> {
    const kept = words.length > 0 ? this.kept(`festival lex.lookup cmu\n${words.join('\n')}`, 'json') : null;
    if (kept) {
      try {
        return new Map(JSON.parse(await readFile(kept, 'utf8')) as [string, string][]);
      } catch {} // not kept yet (or unreadable): asked again
    }
    const found = await this.pronounce(words);
    // Nothing found may be festival failing (logged in pronounce): not kept, so asked again next time.
    if (kept && found.size > 0) await this.keep(kept, (tmp) => writeFile(tmp, JSON.stringify([...found]), { mode: 0o600 }));
    return found;
  }

  /** Festival's pronunciations of words (`[a-z']+` only) in CMU phones; a word it cannot say is left out. */
  private async pronounce(words: string[]): Promise<Map<string, string>> {
    const safe = words.filter((w) => /^[a-z][a-z']*$/.test(w));
    const found = new Map<string, string>();
    if (safe.length === 0) return found;
    const script = `(lex.select "cmu")\n${safe.map((w) => `(print (lex.lookup "${w}" nil))`).join('\n')}\n`;
    const run = spawnTool(this.opts.festival ?? 'festival', ['--heap', '1000000', '--pipe'], {});
    const out: Buffer[] = [];
    run.child.stdout!.on('data', (c: Buffer) => out.push(c));
    run.child.stdin!.end(script);
    const exit = await run.exited;
    if (exit.spawnError || exit.code !== 0) {
      this.opts.log?.warn({ code: exit.code }, 'festival could not give pronunciations: words the dictionary lacks are left out of the models');
      return found;
    }
    for (const line of Buffer.concat(out).toString('utf8').split('\n')) {
      const m = /^\("([a-z']+)" \S+ \((.*)\)\)$/.exec(line.trim());
      if (!m) continue;
      const phones = [...m[2]!.matchAll(/\(\(([a-z ]+)\) \d\)/g)].flatMap((s) => s[1]!.split(' ')).map((p) => PHONES[p] ?? p.toUpperCase());
      if (phones.length > 0) found.set(m[1]!, phones.join(' '));
    }
    return found;
  }

  /** Writes the set's lmctl and dictionary for the next engines (a new generation). */
  private async publish(): Promise<void> {
    const modelDir = this.opts.modelDir ?? DEFAULT_MODEL_DIR;
    const generation = ++this.generation;
    const dir = join(this.opts.dir, 'language-models');
    const lmctl = join(dir, `set-${generation}.lmctl`);
    const dict = join(dir, `set-${generation}.dict`);
    const general = join(modelDir, 'en-us.lm.bin');
    await writeFile(lmctl, [`${general} ${GENERAL_MODEL}`, ...this.models.map((m) => `${m.path} ${m.name}`)].join('\n') + '\n', { mode: 0o600 });
    const extra = [...this.extraWords].map(([w, p]) => `${w} ${p}`).join('\n');
    await writeFile(dict, `${(await readFile(join(modelDir, 'cmudict-en-us.dict'), 'utf8')).trimEnd()}\n${extra}\n`, { mode: 0o600 });
    this.set = { generation, lmctl, dict, names: new Set([GENERAL_MODEL, ...this.models.map((m) => m.name)]) };
  }
}

/** `from` copied to `to`; false when `from` is not there (not kept yet). */
async function copied(from: string, to: string): Promise<boolean> {
  try {
    await copyFile(from, to);
    return true;
  } catch {
    return false;
  }
}
