// Sarvam's language codes (SDK sarvamai 1.1.10): `xx-IN` tags, `unknown` for detection, and Odia
// written `od-IN` where BCP-47 (and the gateway's spec) has `or-IN`. The gateway accepts both.
const SARVAM_LANGUAGES = new Set([
  'hi',
  'bn',
  'kn',
  'ml',
  'mr',
  'od',
  'pa',
  'ta',
  'te',
  'en',
  'gu',
  'as',
  'ur',
  'ne',
  'kok',
  'ks',
  'sd',
  'sa',
  'sat',
  'mni',
  'brx',
  'mai',
  'doi',
]);

/**
 * Sarvam's code for a BCP-47 tag, by its language (`hi`, `hi-IN` → `hi-IN`; `or-IN`, `od-IN` →
 * `od-IN`; `en-US` → `en-IN`: Sarvam knows one English, and the tag is a hint); `unknown` (detect)
 * when absent; null when Sarvam has no such language.
 */
export function toSarvamLanguage(tag: string | undefined): string | null {
  if (tag === undefined) return 'unknown';
  let lang = (tag.split('-')[0] ?? '').toLowerCase();
  if (lang === 'or') lang = 'od';
  return SARVAM_LANGUAGES.has(lang) ? `${lang}-IN` : null;
}

/** The BCP-47 tag of a code Sarvam answers with (`od-IN` → `or-IN`); null when it gave none. */
export function fromSarvamLanguage(v: unknown): string | null {
  if (typeof v !== 'string' || !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(v)) return null;
  return v.replace(/^od(?=-|$)/i, 'or');
}
