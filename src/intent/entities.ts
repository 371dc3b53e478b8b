// Entities by deterministic patterns, flat and omitted when absent:
//   amount — rupees as a number (see amounts.ts)          phone — E.164 ("+919876543210")
//   email  — lower-cased address                           date  — YYYY-MM-DD in Asia/Kolkata (see dates.ts)
// Phones use libphonenumber-js with its `max` metadata (the default metadata accepts 12-digit
// account numbers as phones) and default country IN, on text whose Devanagari digits are ASCII.
import { phoneNumbers } from '../shared/phones.ts';
import { findAmount } from './amounts.ts';
import { findDate } from './dates.ts';
import { canonical, type Normalized } from './normalize.ts';

export interface Entities {
  amount?: number;
  phone?: string;
  email?: string;
  date?: string;
}

export const ENTITY_NAMES = ['amount', 'phone', 'email', 'date'] as const;
export type EntityName = (typeof ENTITY_NAMES)[number];

const EMAIL = /[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}/i;

export function findPhone(plain: string): { e164: string; start: number; end: number } | null {
  if (!/\d{3}/.test(plain)) return null;
  // libphonenumber-js is loaded at the first text with three digits in a row.
  for (const found of phoneNumbers().findPhoneNumbersInText(plain, { defaultCountry: 'IN' })) {
    if (found.number.isValid()) return { e164: found.number.number, start: found.startsAt, end: found.endsAt };
  }
  return null;
}

/** Digits as said aloud, in English and Hindi (canonical spellings): a voice turn spells a number out. */
const DIGIT_SPELLINGS = (
  [
    ['zero', 0],
    ['oh', 0],
    ['shunya', 0],
    ['shoony', 0],
    ['sunya', 0],
    ['one', 1],
    ['ek', 1],
    ['two', 2],
    ['do', 2],
    ['three', 3],
    ['teen', 3],
    ['tin', 3],
    ['four', 4],
    ['char', 4],
    ['chaar', 4],
    ['five', 5],
    ['paanch', 5],
    ['panch', 5],
    ['six', 6],
    ['chhe', 6],
    ['chhah', 6],
    ['che', 6],
    ['chheh', 6],
    ['seven', 7],
    ['saat', 7],
    ['sat', 7],
    ['eight', 8],
    ['aath', 8],
    ['ath', 8],
    ['nine', 9],
    ['nau', 9],
  ] as const
).flatMap(([w, d]) => [[w, String(d)] as const, [canonical(w), String(d)] as const]);
const DIGIT_WORDS = new Map<string, string>(DIGIT_SPELLINGS);
const REPEAT = new Map(
  [
    ['double', 2],
    ['triple', 3],
  ].map(([w, n]) => [canonical(w as string), n as number]),
);

/**
 * Runs of seven or more digits said as words ("nine eight seven six five double four three two
 * one", "nau aath saat...") written as digits, so a phone number read out on a call is found;
 * "double"/"triple" repeat the next digit, as Indian English says numbers. Shorter runs ("do baar",
 * "one or two") stay words.
 */
export function spokenDigits(plain: string): string {
  const words = plain.split(' ');
  // Most turns have no run to rewrite: count the candidates before folding spellings word by word.
  let candidates = 0;
  for (const w of words) candidates += /^\d+$/.test(w) ? w.length : DIGIT_WORDS.has(w) || REPEAT.has(w) ? 1 : 0;
  if (candidates < 7) return plain;
  const out: string[] = [];
  let run: string[] = [];
  let digits = '';
  const flush = () => {
    if (digits.length >= 7) out.push(digits);
    else out.push(...run);
    run = [];
    digits = '';
  };
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const times = REPEAT.get(canonical(w));
    const next = words[i + 1];
    const nextDigit = next === undefined ? undefined : /^\d$/.test(next) ? next : DIGIT_WORDS.get(canonical(next));
    if (times !== undefined && nextDigit !== undefined) {
      run.push(w, next!);
      digits += nextDigit.repeat(times);
      i++;
      continue;
    }
    const d = /^\d+$/.test(w) ? w : DIGIT_WORDS.get(canonical(w));
    if (d !== undefined) {
      run.push(w);
      digits += d;
      continue;
    }
    flush();
    out.push(w);
  }
  flush();
  return out.join(' ');
}

export function extractEntities(norm: Normalized, nowMs: number): Entities {
  const out: Entities = {};
  let rest = norm.plain;
  const email = EMAIL.exec(rest);
  if (email) {
    out.email = email[0].toLowerCase();
    rest = rest.replace(email[0], ' ');
  }
  const spoken = spokenDigits(rest);
  const phone = findPhone(spoken);
  if (phone) {
    out.phone = phone.e164;
    // A phone number's digits are not an amount or a date.
    rest = spoken.slice(0, phone.start) + ' ' + spoken.slice(phone.end);
  }
  const amount = findAmount(rest);
  if (amount !== null) out.amount = amount;
  const date = findDate(rest, norm.tokens, nowMs);
  if (date !== null) out.date = date;
  return out;
}
