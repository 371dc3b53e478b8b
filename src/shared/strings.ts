// The two kinds of caller-chosen strings, as TypeBox schemas for the route (and config) schemas.
//
// Key strings are ids, names and labels (session_id, model and pack ids, end-user ids, key and
// organization names, group labels): printable text, so no C0 or C1 control character, no DEL and
// no unpaired surrogate. Free text (a turn to classify) may hold anything but NUL and unpaired
// surrogates. An unpaired surrogate is refused because every store writes strings as UTF-8 and
// reads U+FFFD back in its place (src/store/key-strings.ts), NUL because LMDB keys use it as a separator.
//
// The patterns mean the same with the `u` flag (Ajv, TypeBox) and without it: an astral character
// is one code point above U+FFFF with it, and a high + low surrogate pair (the second branch) without.
import { Type, type TStringOptions } from 'typebox';

const PAIR = '[\\ud800-\\udbff][\\udc00-\\udfff]';
export const KEY_STRING_PATTERN = `^(?:[^\\u0000-\\u001f\\u007f-\\u009f\\ud800-\\udfff]|${PAIR})*$`;
export const FREE_TEXT_PATTERN = `^(?:[^\\u0000\\ud800-\\udfff]|${PAIR})*$`;

/** What a refused string is told, by pattern (src/http/app.ts names the field). */
export const STRING_RULES = new Map([
  [KEY_STRING_PATTERN, 'must not contain control characters or unpaired surrogates'],
  [FREE_TEXT_PATTERN, 'must not contain NUL characters or unpaired surrogates'],
]);

const PATTERNS = { key: KEY_STRING_PATTERN, free: FREE_TEXT_PATTERN };
const COMPILED = { key: new RegExp(KEY_STRING_PATTERN, 'u'), free: new RegExp(FREE_TEXT_PATTERN, 'u') };

/**
 * For a string read outside a schema (a multipart field, the realtime socket's query): the rule it
 * breaks, in the words the schemas' refusals use (STRING_RULES), or null when it keeps it.
 */
export function brokenRule(value: string, kind: 'key' | 'free'): string | null {
  return COMPILED[kind].test(value) ? null : STRING_RULES.get(PATTERNS[kind])!;
}

/** An id, a name or a label of at most `maxLength` characters. */
export const KeyString = (maxLength: number, options: TStringOptions = {}) => Type.String({ ...options, maxLength, pattern: KEY_STRING_PATTERN });

/** Free text of at most `maxLength` characters. */
export const FreeText = (maxLength: number, options: TStringOptions = {}) => Type.String({ ...options, maxLength, pattern: FREE_TEXT_PATTERN });

/** `s` as a regular expression matching it literally (a GridFS listing by key prefix). */
export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
