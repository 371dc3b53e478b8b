// Entities by deterministic patterns, flat and omitted when absent:
//   amount — rupees as a number (see amounts.ts)          phone — E.164 ("+919876543210")
//   email  — lower-cased address                           date  — YYYY-MM-DD in Asia/Kolkata (see dates.ts)
// Phones use libphonenumber-js with its `max` metadata (the default metadata accepts 12-digit
// account numbers as phones) and default country IN, on text whose Devanagari digits are ASCII.
import { findPhoneNumbersInText } from 'libphonenumber-js/max';
import { findAmount } from './amounts.ts';
import { findDate } from './dates.ts';
import type { Normalized } from './normalize.ts';

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
  for (const found of findPhoneNumbersInText(plain, { defaultCountry: 'IN' })) {
    if (found.number.isValid()) return { e164: found.number.number, start: found.startsAt, end: found.endsAt };
  }
  return null;
}

export function extractEntities(norm: Normalized, nowMs: number): Entities {
  const out: Entities = {};
  let rest = norm.plain;
  const email = EMAIL.exec(rest);
  if (email) {
    out.email = email[0].toLowerCase();
    rest = rest.replace(email[0], ' ');
  }
  const phone = findPhone(rest);
  if (phone) {
    out.phone = phone.e164;
    // A phone number's digits are not an amount or a date.
    rest = rest.slice(0, phone.start) + ' ' + rest.slice(phone.end);
  }
  const amount = findAmount(rest);
  if (amount !== null) out.amount = amount;
  const date = findDate(rest, norm.tokens, nowMs);
  if (date !== null) out.date = date;
  return out;
}
