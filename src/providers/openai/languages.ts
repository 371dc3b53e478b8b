// Whisper's languages (openai/whisper, whisper/tokenizer.py `LANGUAGES` and its aliases):
// verbose_json names the detected language in lower-case English ("hindi"), not by code. Whisper
// has Assamese but no Odia. `jw` is Whisper's code for Javanese, `jv` in ISO 639-1. The table is
// src/speech/languages.ts's `WHISPER`; here, the names' aliases and the reverse lookup.
import { WHISPER } from '../../speech/languages.ts';

const ALIASES: Record<string, string> = {
  burmese: 'my',
  valencian: 'ca',
  flemish: 'nl',
  haitian: 'ht',
  letzeburgesch: 'lb',
  pushto: 'ps',
  panjabi: 'pa',
  moldavian: 'ro',
  moldovan: 'ro',
  sinhalese: 'si',
  castilian: 'es',
  mandarin: 'zh',
};

const BY_NAME = new Map<string, string>([...Object.entries(WHISPER).map(([code, name]) => [name, code] as const), ...Object.entries(ALIASES)]);

/**
 * The ISO 639 code of what an OpenAI-compatible server reports as the language: Whisper's name
 * ("hindi"), or a code (servers such as whisper.cpp's answer "hi"). Null when unknown.
 */
export function whisperLanguageCode(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const s = v.trim().toLowerCase();
  const code = BY_NAME.get(s) ?? (Object.hasOwn(WHISPER, s) ? s : null);
  return code === 'jw' ? 'jv' : code;
}
