// A collection's shared msgpack record structures, kept across a failed commit. msgpackr writes a
// document as a record: a structure id and the values, the field names stored once per collection as
// that structure (indexes.ts: a point read ~3x faster). A new document shape mints a structure, and
// lmdb-js saves the collection's list of structures inside the transaction that first uses it. When
// that commit fails (a full disk) the saved list is lost but the encoder keeps the structure and
// goes on writing documents with it, which commit once space returns and then read back wrong after
// a restart ("Data read, but end of buffer not reached"); worse, msgpackr's own repair (the next new
// shape finds the stored list shorter than it believes, reloads it and mints the next structure at
// the lost one's id) made those documents decode with another shape's field names.
//
// In one process the encoder's structures are the truth (every document it wrote uses them, and the
// embedded store is for one process), so:
// - a save that finds the stored list a strict prefix of the encoder's (our own lost save, not another
//   writer's) writes the encoder's whole list instead of reloading the stored one;
// - after a failed commit, before its kept writes are written again (commit-failures.ts), every list
//   shorter on disk than in the encoder is written again, in a transaction of its own queued first
//   (commits are ordered), so no document of a lost shape commits before its structure.

import type { Database, Key, RootDatabase } from 'lmdb';

/** Where each collection's database keeps its shared msgpack structures (lmdb-js's convention). */
export const SHARED_STRUCTURES = Symbol.for('structures');

type Structures = (string[] | undefined)[] & { sharedLength?: number; uninitialized?: boolean };
interface Encoder {
  structures?: Structures;
  saveStructures?: (structures: Structures, isCompatible: unknown) => unknown;
}

/** lmdb-js's msgpackr encoder of a database opened with shared structures (not in its types). */
function encoderOf(db: Database): Encoder | undefined {
  // lmdb-js keeps it as the store's `encoder` property, which its type declarations leave out.
  return (db as unknown as { encoder?: Encoder }).encoder;
}

/** Whether `stored` is a strict prefix of `mine`: a save of ours that a failed commit lost. */
function lostFrom(stored: unknown, mine: Structures): boolean {
  if (stored !== undefined && !Array.isArray(stored)) return false;
  const have = (stored as Structures | undefined) ?? [];
  const length = mine.sharedLength ?? mine.length;
  if (have.length >= length) return false;
  for (let i = 0; i < have.length; i++) {
    const a = have[i];
    const b = mine[i];
    if (!a || !b || a.length !== b.length || a.some((key, j) => key !== b[j])) return false;
  }
  return true;
}

/** The collections' document databases of one environment, whose structures it keeps. */
export class KeptStructures {
  private readonly dbs = new Set<Database>();

  constructor(private readonly env: RootDatabase) {}

  /** Opens (or finds) a collection's document database with shared structures, kept. */
  open<T, K extends Key>(name: string): Database<T, K> {
    const db = this.env.openDB<T, K>(name, { sharedStructuresKey: SHARED_STRUCTURES });
    if (this.dbs.has(db as Database)) return db;
    this.dbs.add(db as Database);
    const encoder = encoderOf(db as Database);
    const save = encoder?.saveStructures;
    if (encoder && save) {
      encoder.saveStructures = (structures, isCompatible) =>
        save(structures, (stored: unknown) => (lostFrom(stored, structures) ? true : typeof isCompatible === 'function' ? isCompatible(stored) : isCompatible));
    }
    return db;
  }

  /** Writes again, in one transaction, every list a failed commit lost; resolves when it commits. */
  resaveLost(): Promise<unknown> | undefined {
    const lost: [Database, Structures][] = [];
    for (const db of this.dbs) {
      const mine = encoderOf(db)?.structures;
      if (!mine || mine.uninitialized) continue;
      if (lostFrom(db.get(SHARED_STRUCTURES), mine)) lost.push([db, mine]);
    }
    if (lost.length === 0) return undefined;
    return this.env.childTransaction(() => {
      for (const [db, mine] of lost) db.putSync(SHARED_STRUCTURES, mine.slice(0, mine.sharedLength ?? mine.length));
    });
  }
}
