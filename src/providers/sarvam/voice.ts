// Sarvam's voices and languages for text to speech (bulbul). A model's voice is written short
// (`anushka`: Sarvam's speaker) or long, `<name>_<language>_<style>` (`anushka_hi-IN_conversational`):
// the name is the speaker, the language (any BCP-47 tag, `hi` or `hi-IN`) the one it speaks, the
// style a label of the catalog's (bulbul has no style parameter: it is not sent). Sarvam needs a
// `target_language_code`: the request's `language`, else the voice's, else the script of the text
// (Devanagari → hi-IN, Tamil → ta-IN...; Latin → en-IN).
import { canonicalLanguage, sarvamLanguageCode } from '../../speech/languages.ts';

/** The languages bulbul speaks (Sarvam's codes). */
export const SARVAM_TTS_LANGUAGES: readonly string[] = ['bn-IN', 'en-IN', 'gu-IN', 'hi-IN', 'kn-IN', 'ml-IN', 'mr-IN', 'od-IN', 'pa-IN', 'ta-IN', 'te-IN'];

export interface SarvamVoice {
  speaker: string;
  /** BCP-47, as the voice's name gives it. */
  language?: string;
  style?: string;
}

/** A voice name read as Sarvam's, or null when it is neither form. */
export function parseSarvamVoice(voice: string): SarvamVoice | null {
  const [name, language, ...style] = voice.split('_');
  if (!name || !/^[a-z][a-z0-9-]*$/i.test(name)) return null;
  const out: SarvamVoice = { speaker: name.toLowerCase() };
  if (language === undefined) return out;
  const tag = canonicalLanguage(language);
  if (tag === null) return null;
  out.language = tag;
  if (style.length > 0) out.style = style.join('_');
  return out;
}

/** Sarvam's code for a tag when bulbul speaks its language (`hi` → `hi-IN`, `or-IN` → `od-IN`), else null. */
export function sarvamTtsLanguage(tag: string): string | null {
  const primary = sarvamLanguageCode(tag)?.split('-')[0];
  const code = primary === undefined ? null : `${primary}-IN`;
  return code !== null && SARVAM_TTS_LANGUAGES.includes(code) ? code : null;
}

/** Unicode blocks of the Indic scripts bulbul reads, each with the language it most likely writes. */
const SCRIPTS: readonly [number, number, string][] = [
  [0x0900, 0x097f, 'hi-IN'], // Devanagari (also Marathi: name the language to get mr-IN)
  [0x0980, 0x09ff, 'bn-IN'],
  [0x0a00, 0x0a7f, 'pa-IN'], // Gurmukhi
  [0x0a80, 0x0aff, 'gu-IN'],
  [0x0b00, 0x0b7f, 'od-IN'],
  [0x0b80, 0x0bff, 'ta-IN'],
  [0x0c00, 0x0c7f, 'te-IN'],
  [0x0c80, 0x0cff, 'kn-IN'],
  [0x0d00, 0x0d7f, 'ml-IN'],
];

/** The language of the first Indic letter of a text; en-IN when it has none. */
export function languageOfScript(text: string): string {
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (c < 0x0900 || c > 0x0d7f) continue;
    for (const [from, to, code] of SCRIPTS) if (c >= from && c <= to) return code;
  }
  return 'en-IN';
}
