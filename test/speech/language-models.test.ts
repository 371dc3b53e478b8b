// The conversation's language models (src/speech/language-models.ts) on the real engines: a domain's
// models built with irstlm, loaded by a resident pocketsphinx beside the general model and chosen per
// utterance; festival's voice, heard over μ-law as a callee is. Sentences the demo pack was not
// trained on: the domain's model hears a complaint the general model garbles, still hears speech
// outside the domain, and after a yes/no question hears the short answer the open models miss.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { SPEECH_BACKGROUND_FILE, CONFIG_DIR } from '../../src/config.ts';
import { speakWhole } from '../../src/providers/local/speak.ts';
import { LanguageModels, GENERAL_MODEL } from '../../src/speech/language-models.ts';
import { appendUtterance, startPocketsphinxEngine, type UtteranceEngine } from '../../src/speech/pocketsphinx-engine.ts';
import { loadResamplers } from '../../src/speech/resample.ts';
import { overTelephone } from '../../src/speech/telephone.ts';
import { wordErrorRate as werOf } from '../../src/speech/wer.ts';

const wordErrorRate = (reference: string, hypothesis: string) => werOf([{ reference, hypothesis }]);
import { speechDomain } from '../../src/voice/expectations.ts';
import { missing, tempDir } from './helpers.ts';

const skip = missing('pocketsphinx') || (!existsSync('/usr/lib/irstlm/bin/tlm') && 'irstlm is not installed (scripts/install-debian-packages.sh)');

describe('conversation language models', { skip }, () => {
  const tmp = tempDir('language-models-');
  // Built once, in before(), keeping what it made in `cache` (empty until then): the cache's test reads it.
  const cache = tempDir('language-model-cache-');
  const models = new LanguageModels({ dir: tmp.dir, backgroundFile: SPEECH_BACKGROUND_FILE, cacheDir: cache.dir });
  const domain = speechDomain(JSON.parse(readFileSync(`${CONFIG_DIR}packs/demo-banking-telecom.json`, 'utf8')));
  let engine: UtteranceEngine;

  before(async () => {
    assert.equal(models.modelFor(domain.key, null), null, 'nothing before it is built');
    assert.equal(await models.prepare(domain), true);
    engine = await startPocketsphinxEngine({ tmpDir: tmp.dir, models: models.current() });
  });
  after(async () => {
    await engine?.end();
    tmp.remove();
    cache.remove();
  });

  /** `text` in festival's voice over μ-law, decoded with each model named (null: the general one). */
  async function heard(text: string, ...names: (string | null)[]): Promise<string[]> {
    const resamplers = await loadResamplers();
    const { pcm, rate } = await speakWhole('en-us-slt', text);
    const line = overTelephone(resamplers, pcm, rate);
    const { start, end } = await appendUtterance(engine, line);
    const out: string[] = [];
    for (const name of names) out.push((await engine.decode(start, end, name ?? GENERAL_MODEL)).map((s) => s.text).join(' '));
    return out;
  }

  it("loads every model of the domain beside the general one, with the pack's own words in its dictionary", () => {
    const set = models.current()!;
    for (const e of ['open', 'yes_no', 'amount', 'digits']) assert.ok(set.names.has(`${models.modelFor(domain.key, null)!.replace(/-open$/, '')}-${e}`), e);
    assert.ok(set.names.has(GENERAL_MODEL));
    // "nikle" (romanized Hindi in the pack) is not in the general dictionary: festival gave it phones.
    assert.match(readFileSync(set.dict, 'utf8'), /^nikle [A-Z ]+$/m);
  });

  it('hears an in-domain complaint the general model garbles, and still hears speech outside the domain', async () => {
    const open = models.modelFor(domain.key, null);
    const complaint = 'the machine gave me less cash than I asked for';
    const [general, inDomain] = await heard(complaint, null, open);
    assert.ok(wordErrorRate(complaint, inDomain!) <= 0.2, `domain model heard "${inDomain}"`);
    assert.ok(wordErrorRate(complaint, inDomain!) < wordErrorRate(complaint, general!), `general "${general}", domain "${inDomain}"`);
    const [outside] = await heard('what is the weather today', open);
    assert.ok(wordErrorRate('what is the weather today', outside!) <= 0.2, `outside the domain: "${outside}"`);
  });

  it('hears the answer to a yes/no question with the yes/no model, and an amount with the amount model', async () => {
    const [open, yesNo] = await heard('no thanks', models.modelFor(domain.key, null), models.modelFor(domain.key, 'yes_no'));
    assert.equal(yesNo, 'no thanks', `open model "${open}"`);
    const [amount] = await heard('two thousand rupees', models.modelFor(domain.key, 'amount'));
    assert.equal(amount, 'two thousand rupees');
  });

  it('copies a domain built before from the cache folder: the same models without running tlm or festival', async () => {
    const elsewhere = tempDir('language-models-again-');
    try {
      // Neither tool can run here: only the cache can give this one its models.
      const again = new LanguageModels({
        dir: elsewhere.dir,
        backgroundFile: SPEECH_BACKGROUND_FILE,
        cacheDir: cache.dir,
        tlm: '/bin/false',
        festival: '/bin/false',
      });
      assert.equal(await again.prepare(domain), true);
      const [built, copied] = [models.current()!, again.current()!];
      assert.deepEqual([...copied.names], [...built.names]);
      assert.equal(readFileSync(copied.dict, 'utf8'), readFileSync(built.dict, 'utf8'), "festival's pronunciations too (nikle)");
      const arpa = (set: typeof built) =>
        readFileSync(set.lmctl, 'utf8')
          .split('\n')
          .filter((l) => l.endsWith('-yes_no'))[0]!
          .split(' ')[0]!;
      assert.equal(readFileSync(arpa(copied), 'utf8'), readFileSync(arpa(built), 'utf8'));
      // Without the cache, the same tools fail the build (the general model is used): the copy above was no accident.
      const none = new LanguageModels({ dir: elsewhere.dir, backgroundFile: SPEECH_BACKGROUND_FILE, tlm: '/bin/false', festival: '/bin/false' });
      assert.equal(await none.prepare(domain), false);
    } finally {
      elsewhere.remove();
    }
  });

  it('builds a domain once, whoever asks', async () => {
    const again = await Promise.all([models.prepare(domain), models.prepare({ ...domain })]);
    assert.deepEqual(again, [true, true]);
    assert.equal(models.current()!.generation, 1);
  });
});
