// Language codes as the three sides write them: our API and the spec (BCP-47, `hi-IN`), OpenAI's
// transcription request (ISO-639-1, `hi`), Whisper's `verbose_json` (the lowercase English name,
// `hindi`). Sarvam writes Odia `od-IN` where the spec writes `or-IN`; both are accepted.

/**
 * Whisper's language table (openai/whisper `tokenizer.py` LANGUAGES: code → name), the names
 * `verbose_json` carries. `jw` is Whisper's code for Javanese (ISO-639-1: `jv`).
 */
export const WHISPER: Readonly<Record<string, string>> = {
  en: 'english',
  zh: 'chinese',
  de: 'german',
  es: 'spanish',
  ru: 'russian',
  ko: 'korean',
  fr: 'french',
  ja: 'japanese',
  pt: 'portuguese',
  tr: 'turkish',
  pl: 'polish',
  ca: 'catalan',
  nl: 'dutch',
  ar: 'arabic',
  sv: 'swedish',
  it: 'italian',
  id: 'indonesian',
  hi: 'hindi',
  fi: 'finnish',
  vi: 'vietnamese',
  he: 'hebrew',
  uk: 'ukrainian',
  el: 'greek',
  ms: 'malay',
  cs: 'czech',
  ro: 'romanian',
  da: 'danish',
  hu: 'hungarian',
  ta: 'tamil',
  no: 'norwegian',
  th: 'thai',
  ur: 'urdu',
  hr: 'croatian',
  bg: 'bulgarian',
  lt: 'lithuanian',
  la: 'latin',
  mi: 'maori',
  ml: 'malayalam',
  cy: 'welsh',
  sk: 'slovak',
  te: 'telugu',
  fa: 'persian',
  lv: 'latvian',
  bn: 'bengali',
  sr: 'serbian',
  az: 'azerbaijani',
  sl: 'slovenian',
  kn: 'kannada',
  et: 'estonian',
  mk: 'macedonian',
  br: 'breton',
  eu: 'basque',
  is: 'icelandic',
  hy: 'armenian',
  ne: 'nepali',
  mn: 'mongolian',
  bs: 'bosnian',
  kk: 'kazakh',
  sq: 'albanian',
  sw: 'swahili',
  gl: 'galician',
  mr: 'marathi',
  pa: 'punjabi',
  si: 'sinhala',
  km: 'khmer',
  sn: 'shona',
  yo: 'yoruba',
  so: 'somali',
  af: 'afrikaans',
  oc: 'occitan',
  ka: 'georgian',
  be: 'belarusian',
  tg: 'tajik',
  sd: 'sindhi',
  gu: 'gujarati',
  am: 'amharic',
  yi: 'yiddish',
  lo: 'lao',
  uz: 'uzbek',
  fo: 'faroese',
  ht: 'haitian creole',
  ps: 'pashto',
  tk: 'turkmen',
  nn: 'nynorsk',
  mt: 'maltese',
  sa: 'sanskrit',
  lb: 'luxembourgish',
  my: 'myanmar',
  bo: 'tibetan',
  tl: 'tagalog',
  mg: 'malagasy',
  as: 'assamese',
  tt: 'tatar',
  haw: 'hawaiian',
  ln: 'lingala',
  ha: 'hausa',
  ba: 'bashkir',
  jw: 'javanese',
  su: 'sundanese',
  yue: 'cantonese',
};

/**
 * Names for the Indian languages Whisper does not know (the spec's `or-IN`, and Sarvam's
 * scheduled languages), written the same way: lowercase English.
 */
const EXTRA: Readonly<Record<string, string>> = {
  or: 'odia',
  kok: 'konkani',
  ks: 'kashmiri',
  sat: 'santali',
  mni: 'manipuri',
  brx: 'bodo',
  mai: 'maithili',
  doi: 'dogri',
};

/** Sarvam writes Odia `od`; ISO-639-1 and BCP-47 write `or`. */
const ALIASES: Readonly<Record<string, string>> = { od: 'or' };

const BCP47 = /^([a-z]{2,3})(?:-([a-z]{4}))?(?:-([a-z]{2}|\d{3}))?$/i;

/**
 * The canonical BCP-47 form of a code (`HI-in` → `hi-IN`, `od-IN` → `or-IN`, `hi` → `hi`), or
 * null when it is not a language[-Script][-REGION] tag.
 */
export function canonicalLanguage(code: string): string | null {
  const m = BCP47.exec(code.trim());
  if (!m) return null;
  const primary = m[1]!.toLowerCase();
  const language = ALIASES[primary] ?? primary;
  const script = m[2] ? m[2][0]!.toUpperCase() + m[2].slice(1).toLowerCase() : null;
  const region = m[3]?.toUpperCase() ?? null;
  return [language, script, region].filter(Boolean).join('-');
}

/** The primary language subtag, as OpenAI's `language` field takes it (`hi-IN` → `hi`; `od-IN` → `or`). */
export function primaryLanguage(code: string): string | null {
  return canonicalLanguage(code)?.split('-')[0] ?? null;
}

/** Whisper's name for a language (`hi-IN` → `hindi`), ours for those it lacks (`or-IN` → `odia`). */
export function whisperLanguageName(code: string): string | null {
  const primary = primaryLanguage(code);
  if (primary === null) return null;
  return WHISPER[primary === 'jv' ? 'jw' : primary] ?? EXTRA[primary] ?? null;
}

/** The code for a Whisper language name (`Hindi` → `hi`), as some clients send names. */
export function languageFromName(name: string): string | null {
  const wanted = name.trim().toLowerCase();
  for (const table of [WHISPER, EXTRA]) {
    for (const [code, n] of Object.entries(table)) if (n === wanted) return code === 'jw' ? 'jv' : code;
  }
  return null;
}

/**
 * Which of a model's languages (BCP-47) a request means: the same tag; else, for a bare language
 * (`en`, as OpenAI's ISO-639-1 field and every Whisper client send it), the model's default region
 * for it: the first of the model's languages with that primary subtag, in the model's order (a
 * script variant, `hi-Latn-IN`, only when no plain tag has it); else, for a tag of another region,
 * the only offered tag of the same language (`en-GB` → `en-US` for an English-only model).
 * Accepts a tag, an ISO code or a Whisper name, in any case. Null when none matches, or when a
 * regional tag the model lacks matches several regions (`en-AU` against `en-IN` and `en-US`: the
 * client named a region, and we would pick another).
 */
const SCRIPT = /-[A-Z][a-z]{3}(?:-|$)/;

export function matchLanguage(requested: string, offered: readonly string[]): string | null {
  const tag = canonicalLanguage(requested) ?? languageFromName(requested);
  if (tag === null) return null;
  const canonical = offered.map((o) => ({ o, c: canonicalLanguage(o) }));
  const exact = canonical.find(({ c }) => c === tag);
  if (exact) return exact.o;
  const primary = tag.split('-')[0];
  const same = canonical.filter(({ c }) => c?.split('-')[0] === primary);
  if (same.length === 1) return same[0]!.o;
  if (tag !== primary) return null;
  // A bare language: the first tag of it without a script subtag, else the first with one.
  return (same.find(({ c }) => !SCRIPT.test(c!)) ?? same[0])?.o ?? null;
}

/** The code Sarvam's API takes for a BCP-47 tag: Odia is `od-IN` there. */
export function sarvamLanguageCode(code: string): string | null {
  const tag = canonicalLanguage(code);
  if (tag === null) return null;
  return tag.startsWith('or-') || tag === 'or' ? `od${tag.slice(2)}` : tag;
}
