// Romanized Hindi to Devanagari, so a Hindi voice reads it with Hindi rules (espeak-ng reads Latin
// letters with English rules whatever the voice). Through `@indic-transliteration/sanscript`'s ITRANS
// scheme, with the habits of informal Hindi spelling first: lower case (ITRANS gives capitals a
// meaning: `N` is ण), and a word-final `a` after a consonant is long (`kitna` → कितना, not कित्न).
// Text that already has Devanagari, or no Latin letters, is left as it is.
import { createRequire } from 'node:module';

// A CommonJS module (the Sanscript object), required at the first transliteration rather than
// loaded with the gateway.
const load = createRequire(import.meta.url);
type Sanscript = { t(data: string, from: string, to: string): string };
let sanscript: Sanscript | undefined;
const transliterate = (data: string, from: string, to: string): string =>
  (sanscript ??= load('@indic-transliteration/sanscript') as Sanscript).t(data, from, to);

const LATIN = /[A-Za-z]/;
const DEVANAGARI = /[\u0900-\u097F]/;

/** Whether `text` is romanized (Latin letters, no Devanagari). */
export function isRomanized(text: string): boolean {
  return LATIN.test(text) && !DEVANAGARI.test(text);
}

export function romanizedHindiToDevanagari(text: string): string {
  if (!isRomanized(text)) return text;
  const itrans = text.toLowerCase().replace(/([b-df-hj-np-tv-z])a\b/g, '$1A');
  return transliterate(itrans, 'itrans', 'devanagari');
}
