// A reply's playback on its own: paced chunks with marks, what the echoed marks say was heard, and
// a cut (barge-in) that clears the carrier's queue and keeps the heard part of the cut line.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Pacer } from '../../src/voice/pacer.ts';
import { LEAD_MS, Playback, wholeChunks } from '../../src/voice/playback.ts';
import { SpeechClip } from '../../src/speech/clip.ts';
import { twilioWire } from '../../src/providers/carrier-wire/twilio.ts';

const wire = twilioWire.gateway;
/** `ms` of 8 kHz PCM16 (a low tone: not silence, so its μ-law differs from the padding). */
const clip = (ms: number) => new SpeechClip(Buffer.from(new Int16Array((ms * 8000) / 1000).map((_, i) => Math.round(3000 * Math.sin(i / 5))).buffer));

function playback() {
  const frames: Record<string, unknown>[] = [];
  let marks = 0;
  const p = new Playback(
    {
      wire,
      pacer: new Pacer(),
      now: Date.now,
      log: pino({ level: 'silent' }),
      outlet: () => ({ send: (f) => frames.push(f), sid: 'MZ1' }),
      over: () => false,
      markName: () => `m${++marks}`,
    },
    new AbortController(),
  );
  const markNames = () => frames.filter((f) => f.event === 'mark').map((f) => (f.mark as { name: string }).name);
  return { p, frames, markNames };
}

async function until(what: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!what()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('a reply playback', () => {
  it('pads each line to whole chunks', () => {
    assert.equal(wholeChunks(clip(400), wire).length, 3200);
    const padded = wholeChunks(clip(410), wire); // 82 bytes past the 20th chunk
    assert.equal(padded.length, 3360);
    assert.ok(
      padded.subarray(3280).every((b) => b === 0xff),
      'μ-law silence',
    );
  });

  it('plays every chunk with a mark each 200 ms and at its end; done once the last mark is echoed', async () => {
    const { p, frames, markNames } = playback();
    const t0 = performance.now();
    const played = p.play();
    p.append('alpha beta', clip(400));
    p.append('one two three four', clip(410));
    p.finish();
    await until(() => markNames().length === 5); // at 200, 400, 600, 800 ms and the end (820 ms), each sent LEAD_MS early
    assert.ok(performance.now() - t0 >= 820 - LEAD_MS - 20, 'paced in real time, not sent at once');
    assert.equal(frames.filter((f) => f.event === 'media').length, 41); // 20 chunks, then 21 (the second line padded)
    let resolved = false;
    void played.then(() => (resolved = true));
    for (const name of markNames().slice(0, 4)) p.marked(name);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(resolved, false, 'not played until the last mark is back');
    p.marked('m5');
    await played;
    assert.equal(p.heardBytes, 6560);
    assert.equal(p.text, 'alpha beta one two three four');
  });

  it('runs a few hundred ms ahead: a stalled event loop leaves the carrier audio to play, and the rest stays paced', async () => {
    const { p, frames } = playback();
    const sentMs = () => frames.filter((f) => f.event === 'media').length * 20;
    const played = p.play();
    p.append('a long line', clip(2000));
    p.finish();
    await new Promise((r) => setTimeout(r, 15));
    // The instance stalls 250 ms (a GC pause, a busy loop): the carrier must hold more than that already.
    const stalledAt = sentMs();
    const until250 = performance.now() + 250;
    while (performance.now() < until250); // busy: no timer runs
    assert.ok(stalledAt >= 250, `${stalledAt} ms of audio at the carrier when the loop stalled`);
    assert.ok(stalledAt < 2000, 'not all at once');
    p.cut();
    await played;
  });

  it('a cut clears the carrier and keeps what was heard: whole lines, then the words that fit', async () => {
    const { p, frames, markNames } = playback();
    const played = p.play();
    p.append('alpha beta', clip(400));
    p.append('one two three four', clip(400));
    await until(() => markNames().length >= 3);
    for (const name of markNames().slice(0, 3)) p.marked(name); // 600 ms heard: line one, half of line two
    assert.equal(p.cut(), 4800);
    await played;
    assert.deepEqual(frames.at(-1), { event: 'clear', streamSid: 'MZ1' });
    assert.equal(p.heardText, 'alpha beta one two');
    p.marked(markNames().at(-1)!);
    assert.equal(p.heardBytes, 4800, 'marks echoed after the cut say nothing');
    assert.equal(p.cut(), null, 'cut once');
  });
});
