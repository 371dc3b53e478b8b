// The text of a realtime socket's items on its way to the client, in commit order: each committed
// utterance's answer (the recogniser's) goes out after every item committed before it; the deltas
// heard of an item (an upstream's partial results) go out as they come while it is the next to be
// answered, else are held until it is. At most the session's `maxPendingUtterances` wait
// (src/realtime/session.ts checks `pending` before it adds one).
import type { Heard } from '../providers/types.ts';
import { DeltaText } from './delta-text.ts';
import type { Recognised } from './recognisers.ts';

/** What the client is sent of an item's text (part of the session's `SessionOutput`). */
export type TranscriptOutput =
  | { type: 'delta'; itemId: string; delta: string }
  | { type: 'completed'; itemId: string; transcript: string; start: number; end: number; seconds: number };

export interface TranscriptsDeps {
  send(out: TranscriptOutput): void;
  /** The session has ended: nothing more goes out. */
  ended(): boolean;
  /** The item whose speech is in progress, if minted (what was heard of it goes out once nothing before it waits). */
  openItem(): string | null;
  /** Item `itemId`'s transcript went out. */
  final(itemId: string): void;
  /** Item `itemId` was not recognised (the session ends). */
  failed(err: unknown, itemId: string): void;
}

interface ItemText {
  text: DeltaText;
  held: string[];
  /** Every item before it is answered: its deltas go out as they come. */
  head: boolean;
}

export class ItemTranscripts {
  /** Items with text heard and not yet completed: their deltas, held while an earlier item is unanswered. */
  private readonly texts = new Map<string, ItemText>();
  /** Committed items not yet answered. */
  pending = 0;
  private answered: Promise<void> = Promise.resolve();

  constructor(private readonly deps: TranscriptsDeps) {}

  /** A delta of `itemId`: sent, or held until every item before it is answered. */
  heard(itemId: string, heard: Heard): void {
    if (this.deps.ended()) return;
    const t = this.itemText(itemId);
    const delta = t.text.take(heard);
    if (!delta) return;
    if (t.head) this.deps.send({ type: 'delta', itemId, delta });
    else t.held.push(delta);
  }

  /** The speech in progress is dropped (clear, update): so is what was heard of it. */
  drop(itemId: string): void {
    this.texts.delete(itemId);
  }

  /**
   * Item `id` is committed (`seconds` long): `recognise` starts its answer, whose deltas stream once
   * it is the next to go out (held until then); the answer goes out in commit order.
   */
  add(id: string, seconds: number, recognise: (onHeard: (heard: Heard) => void) => Promise<Recognised>): void {
    const text = this.itemText(id);
    if (this.pending === 0)
      this.toHead(id); // nothing before it waits for its answer
    else text.head = false;
    this.pending += 1;
    const answer = recognise((heard) => this.heard(id, heard));
    answer.catch(() => {});
    // Answers go out in commit order.
    this.answered = this.answered.then(async () => {
      this.toHead(id);
      try {
        const r = await answer;
        if (this.deps.ended()) return;
        const rest = text.text.finish(r.text);
        if (rest) this.deps.send({ type: 'delta', itemId: id, delta: rest });
        this.deps.send({ type: 'completed', itemId: id, transcript: r.text, start: r.start, end: r.end, seconds });
        this.deps.final(id);
      } catch (err) {
        if (this.deps.ended()) return;
        this.deps.failed(err, id);
      } finally {
        this.pending -= 1;
        this.texts.delete(id);
        // The speech in progress is next: what was heard of it goes out.
        const open = this.deps.openItem();
        if (this.pending === 0 && open && this.texts.has(open)) this.toHead(open);
      }
    });
  }

  private itemText(itemId: string): ItemText {
    let t = this.texts.get(itemId);
    if (!t) this.texts.set(itemId, (t = { text: new DeltaText(), held: [], head: this.pending === 0 }));
    return t;
  }

  /** `itemId` is the next to be answered: its held deltas go out. */
  private toHead(itemId: string): void {
    const t = this.itemText(itemId);
    t.head = true;
    for (const delta of t.held.splice(0)) if (!this.deps.ended()) this.deps.send({ type: 'delta', itemId, delta });
  }
}
