// A streamed reply as speech (src/voice/lines.ts): the text is cut into sentences as they end, not
// into clips of "Dr." or "Hi."; each sentence is synthesized as soon as it is cut, while the ones
// before it are still being consumed, and the lines come out in order; the signal stops the rest.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sentences, spokenLines } from '../../src/voice/lines.ts';
import { SpeechClip } from '../../src/speech/clip.ts';

async function* stream(pieces: string[], delayMs = 0): AsyncGenerator<string> {
  for (const p of pieces) {
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
    yield p;
  }
}

const all = async <T>(it: AsyncIterable<T>): Promise<T[]> => {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
};

/** A clip whose PCM16 bytes are `text` (padded to an even length): which sentence a line's audio is. */
const clipOf = (text: string) => new SpeechClip(Buffer.from(text.length % 2 === 0 ? text : `${text} `));

/** Streams `text` a word at a time, as an LLM's deltas (" word"). */
const words = (text: string) => text.match(/\s*\S+/g) ?? [];

describe('sentences of a streamed reply', () => {
  it('cuts at . ! ? । and newlines, keeps abbreviations, initials, decimals and short fragments with what follows', async () => {
    const text = 'Hi. Dr. Rao will call you at 5.30 today! Is that fine? Mr. A. K. Sharma paid Rs. 500 already.\nआपका खाता सक्रिय है। धन्यवाद';
    assert.deepEqual(await all(sentences(stream(words(text)))), [
      'Hi. Dr. Rao will call you at 5.30 today!',
      'Is that fine?',
      'Mr. A. K. Sharma paid Rs. 500 already.',
      'आपका खाता सक्रिय है।',
      'धन्यवाद',
    ]);
  });

  it('gives each sentence as soon as the next word shows it ended, before the stream does', async () => {
    const seen: string[] = [];
    const deltas = (async function* () {
      for (const w of words('The first sentence is here. The second one follows later.')) {
        seen.push(w);
        yield w;
      }
    })();
    for await (const s of sentences(deltas)) {
      if (s.startsWith('The first')) assert.deepEqual(seen.at(-1), ' The', 'cut when the next word came');
    }
  });

  it('cuts a run-on sentence at a space once it is long', async () => {
    const out = await all(sentences(stream(words('word '.repeat(200)))));
    assert.ok(out.length > 1 && out.every((s) => s.length <= 300), JSON.stringify(out.map((s) => s.length)));
  });
});

describe('spoken lines', () => {
  it('synthesizes each sentence as it is cut, in parallel with the consumer, and yields the lines in order', async () => {
    const started: string[] = [];
    const synth = async (text: string) => {
      started.push(text);
      // Later sentences finish first: the order must still be the text's.
      await new Promise((r) => setTimeout(r, text.startsWith('One') ? 60 : 5));
      return clipOf(text);
    };
    const lines = spokenLines(stream(['One sentence here.', 'Two sentences here.', 'Three sentences here.'], 5), synth, new AbortController().signal);
    const iterator = lines[Symbol.asyncIterator]();
    const first = await iterator.next();
    assert.equal(first.value.text, 'One sentence here.');
    assert.deepEqual(started, ['One sentence here.', 'Two sentences here.', 'Three sentences here.'], 'the later ones were being synthesized meanwhile');
    assert.deepEqual(
      (await all({ [Symbol.asyncIterator]: () => iterator })).map((l) => l.audio.pcm16.toString().trimEnd()),
      ['Two sentences here.', 'Three sentences here.'],
    );
  });

  it('stops taking text once the signal fires, and the syntheses get the signal', async () => {
    const abort = new AbortController();
    const signals: AbortSignal[] = [];
    let taken = 0;
    const texts = (async function* () {
      for (let i = 0; i < 50; i++) {
        await new Promise((r) => setTimeout(r, 10));
        taken += 1;
        yield `Sentence number ${i}.`;
      }
    })();
    const lines = spokenLines(texts, async (text, signal) => (signals.push(signal), clipOf(text)), abort.signal);
    for await (const line of lines) {
      if (line.text === 'Sentence number 2.') abort.abort();
      if (abort.signal.aborted) break;
    }
    await new Promise((r) => setTimeout(r, 60));
    assert.ok(taken <= 5, `took ${taken} sentences`);
    assert.ok(signals.every((s) => s === abort.signal) && signals[0]?.aborted);
  });

  it('ends with the failure after the lines before it', async () => {
    const texts = (async function* () {
      yield 'A good first sentence.';
      throw new Error('upstream failed mid-stream');
    })();
    const got: string[] = [];
    await assert.rejects(async () => {
      for await (const line of spokenLines(texts, async (t) => clipOf(t), new AbortController().signal)) got.push(line.text);
    }, /mid-stream/);
    assert.deepEqual(got, ['A good first sentence.']);
  });
});
