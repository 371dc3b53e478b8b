// Strings that key a document must reach the store and come back unchanged. Both adapters write
// strings as UTF-8 (BSON; msgpack), where an unpaired surrogate cannot be kept: it is read back as
// U+FFFD (BSON) or three of them (msgpack), so the stored `_id` is not the one asked for (an actor
// written under 'a\ud800' then never matched its own document: a revision conflict, then its lease
// held forever), and on MongoDB 'a\ud800' and 'a\udc00' name one document. The embedded store's
// ordered-binary keys also use NUL as a separator. So a key is well-formed UTF-16 without NUL,
// checked before any I/O (InvalidKeyError).
import { InvalidKeyError, type Doc, type Filter, type Update } from './port.ts';

/** A NUL, or a surrogate code unit not paired (with the `u` flag, a pair is one astral code point). */
const BAD_KEY = /[\0\p{Cs}]/u;

/** Whether `s` can key a document: well-formed UTF-16, no NUL. */
export function isKeyString(s: string): boolean {
  return !BAD_KEY.test(s);
}

/** Throws InvalidKeyError when `value` is a string that cannot key a document. */
export function checkKey(value: unknown, collection: string, field: string): void {
  if (typeof value === 'string' && BAD_KEY.test(value)) throw new InvalidKeyError(collection, field);
}

/** What a store call names: its filter, its update, the documents it inserts or replaces with. */
export interface NamedIds {
  filter?: Filter;
  update?: Update;
  docs?: readonly Doc[];
}

/**
 * Checks every `_id` a call names: the filter's at its top level (a value, or the operands of
 * `$eq`, `$in`...), the one an upsert would insert (`$set` / `$setOnInsert`), each document's.
 */
export function checkIds(collection: string, named: NamedIds): void {
  const { filter, update, docs } = named;
  if (filter && Object.hasOwn(filter, '_id')) {
    const id = filter._id;
    if (id === null || typeof id !== 'object') checkKey(id, collection, '_id');
    else {
      for (const operand of Object.values(id)) {
        if (Array.isArray(operand)) for (const v of operand) checkKey(v, collection, '_id');
        else checkKey(operand, collection, '_id');
      }
    }
  }
  for (const op of ['$set', '$setOnInsert']) {
    const fields = update?.[op];
    if (fields && typeof fields === 'object' && Object.hasOwn(fields, '_id')) checkKey((fields as Doc)._id, collection, '_id');
  }
  for (const doc of docs ?? []) checkKey(doc._id, collection, '_id');
}
