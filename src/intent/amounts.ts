// Indian amounts, written by hand because no npm library reads them: ₹/Rs/INR/rupees before or after
// the number, Indian digit grouping (1,00,000), "Rs. 500/-", k/thousand/hazaar, lakh/lac, crore/cr,
// and Hindi number words (romanized or Devanagari, which reaches here romanized: "do lakh",
// "paanch sau", "dhai hazaar", "saadhe teen hazaar").
import { canonical } from './normalize.ts';

const UNITS_RAW: Record<string, number> = {
  ek: 1,
  do: 2,
  teen: 3,
  tin: 3,
  char: 4,
  chaar: 4,
  panch: 5,
  paanch: 5,
  chhe: 6,
  chhah: 6,
  chah: 6,
  che: 6,
  saat: 7,
  sat: 7,
  aath: 8,
  ath: 8,
  nau: 9,
  das: 10,
  dus: 10,
  gyarah: 11,
  gyara: 11,
  barah: 12,
  bara: 12,
  terah: 13,
  tera: 13,
  chaudah: 14,
  pandrah: 15,
  pandra: 15,
  solah: 16,
  sola: 16,
  satrah: 17,
  atharah: 18,
  athara: 18,
  unnis: 19,
  bees: 20,
  bis: 20,
  ikkis: 21,
  bais: 22,
  teis: 23,
  chaubis: 24,
  pachchis: 25,
  pachis: 25,
  chhabbis: 26,
  sattais: 27,
  atthais: 28,
  untis: 29,
  tees: 30,
  tis: 30,
  chalis: 40,
  chalees: 40,
  pachas: 50,
  pachaas: 50,
  sath: 60,
  saath: 60,
  sattar: 70,
  assi: 80,
  nabbe: 90,
  // Fractions used with multipliers: dedh hazaar = 1,500, dhai lakh = 2,50,000.
  dedh: 1.5,
  dhai: 2.5,
  adha: 0.5,
  aadha: 0.5,
};
const MULTIPLIERS_RAW: Record<string, number> = {
  sau: 100,
  so: 100,
  hundred: 100,
  hazar: 1_000,
  hazaar: 1_000,
  hajar: 1_000,
  hajaar: 1_000,
  thousand: 1_000,
  k: 1_000,
  lakh: 100_000,
  lakhs: 100_000,
  lac: 100_000,
  lacs: 100_000,
  lakhon: 100_000,
  crore: 10_000_000,
  crores: 10_000_000,
  cr: 10_000_000,
  karod: 10_000_000,
  karor: 10_000_000,
  karodh: 10_000_000,
  million: 1_000_000,
  mn: 1_000_000,
};
const ENGLISH_UNITS: Record<string, number> = {
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  fifteen: 15,
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
};

const UNITS = new Map<string, number>();
for (const [k, v] of [...Object.entries(UNITS_RAW), ...Object.entries(ENGLISH_UNITS)]) {
  UNITS.set(k, v);
  UNITS.set(canonical(k), v);
}
const MULTIPLIERS = new Map<string, number>();
for (const [k, v] of Object.entries(MULTIPLIERS_RAW)) {
  MULTIPLIERS.set(k, v);
  MULTIPLIERS.set(canonical(k), v);
}
// "saadhe teen hazaar" = 3,500; "sava do lakh" = 2,25,000; "paune do sau" = 175.
const MODIFIERS = new Map<string, (n: number) => number>(
  (
    [
      ['sade', (n) => n + 0.5],
      ['sadhe', (n) => n + 0.5],
      ['saadhe', (n) => n + 0.5],
      ['sava', (n) => n + 0.25],
      ['sawa', (n) => n + 0.25],
      ['paune', (n) => n - 0.25],
      ['pone', (n) => n - 0.25],
    ] as [string, (n: number) => number][]
  ).flatMap(([k, f]) => [
    [k as string, f as (n: number) => number],
    [canonical(k as string), f as (n: number) => number],
  ]),
);

const CURRENCY = /^(₹|rs\.?|inr|rupees?|rupaye|rupaiye|rupay|rupe|rupya|rupiya|rupiye|ru\.?|रुपये|रुपए|रु\.?)$/i;

/** A numeral with Indian (1,00,000) or western (100,000) grouping, decimals allowed; null otherwise. */
export function parseNumeral(s: string): number | null {
  const t = s.replace(/\/-$/, '').replace(/^₹/, '');
  if (!/^\d{1,3}(,\d{2})*(,\d{3})?(\.\d+)?$|^\d{1,3}(,\d{3})+(\.\d+)?$|^\d+(\.\d+)?$/.test(t)) return null;
  const n = Number(t.replaceAll(',', ''));
  return Number.isFinite(n) ? n : null;
}

/**
 * Reads a run of number words and numerals ("do lakh pachas hazaar", "2.5 lakh", "5k", "paanch
 * sau") starting at tokens[i]; returns the value and how many tokens it used, or null.
 */
export function readNumber(tokens: string[], i: number): { value: number; used: number } | null {
  let total = 0;
  let current = 0;
  let any = false;
  let j = i;
  let pendingModifier: ((n: number) => number) | null = null;
  for (; j < tokens.length; j++) {
    const raw = tokens[j]!;
    const tok = raw.toLowerCase();
    const numeral = /^\d/.test(tok) ? parseNumeral(tok.replace(/k$/, '')) : null;
    if (numeral !== null) {
      if (current !== 0) break; // two numerals in a row are two numbers
      current = numeral;
      if (/k$/.test(tok)) {
        total += current * 1_000;
        current = 0;
      }
      any = true;
      continue;
    }
    const mod = MODIFIERS.get(tok);
    if (mod && j + 1 < tokens.length && UNITS.has(tokens[j + 1]!.toLowerCase())) {
      pendingModifier = mod;
      continue;
    }
    const unit = UNITS.get(tok);
    if (unit !== undefined) {
      current += pendingModifier ? pendingModifier(unit) : unit;
      pendingModifier = null;
      any = true;
      continue;
    }
    const mult = MULTIPLIERS.get(tok);
    if (mult !== undefined && any) {
      if (mult === 100) current = (current || 1) * 100;
      else {
        total += (current || 1) * mult;
        current = 0;
      }
      continue;
    }
    break;
  }
  if (!any) return null;
  const value = Math.round((total + current) * 100) / 100;
  return { value, used: j - i };
}

const MONEY_CONTEXT = new Set(
  [
    'kat',
    'kata',
    'kate',
    'kati',
    'katt',
    'katke',
    'deducted',
    'debited',
    'debit',
    'charged',
    'withdraw',
    'withdrew',
    'withdrawal',
    'nikala',
    'nikale',
    'nikle',
    'nikla',
    'paise',
    'paisa',
    'amount',
    'refund',
    'recharge',
    'balance',
    'transfer',
    'transferred',
    'sent',
    'bheja',
    'bheje',
    'credited',
    'cash',
    'mile',
    'mila',
    'diye',
    'diya',
    'of',
    'ka',
    'ke',
    'ki',
  ].map((w) => canonical(w)),
);
const MONEY_CONTEXT_STRONG = new Set(
  [
    'kat',
    'kata',
    'kate',
    'kati',
    'deducted',
    'debited',
    'charged',
    'withdraw',
    'withdrew',
    'nikala',
    'nikale',
    'refund',
    'recharge',
    'recharged',
    'credited',
    'paid',
    'payment',
  ].map((w) => canonical(w)),
);
/** A tariff is named by its price ("599 wala plan"), but "2 plan" is a count: prices start at 10. */
const PLAN_CONTEXT = new Set(['plan', 'pack', 'plaan'].map((w) => canonical(w)));
/** Words between a price and its plan: "599 wala plan", "199 ka pack" (not "84 days plan"). */
const PLAN_LINK = new Set(['wala', 'vala', 'wale', 'ka', 'ki', 'ke', 'rs', 'rupees', 'rupaye'].map((w) => canonical(w)));

/** The turn's words for reading money: "₹500", "rs.500", "500rs", "500/-" split; 1,00,000 and 1,234.50 kept whole; words canonical. */
function moneyTokens(plain: string): { tokens: string[]; canon: string[] } {
  const spaced = plain
    .replace(/(₹|rs\.?|inr)(?=\d)/g, '$1 ')
    .replace(/(\d)(rs\.?|inr|rupees?|₹)(?![a-z])/g, '$1 $2')
    .replace(/(\d)\/-/g, '$1');
  const tokens = spaced
    .split(/[\s;:!?()"]+|,(?!\d)|\.(?!\d)(?<!rs\.)/)
    .map((t) => t.replace(/^[.,]+|[.,]+$/g, ''))
    .filter(Boolean);
  return { tokens, canon: tokens.map((t) => (/^\d/.test(t) || CURRENCY.test(t) ? t : canonical(t))) };
}

/**
 * The first amount in the turn, in rupees: a number next to a currency word or sign, a number with
 * a lakh/crore/hazaar multiplier, a bare number (up to 7 digits, not phone-like) next to a money
 * verb or a plan ("5000 kat gaye", "599 wala plan"), or grouped digits or paise next to any money
 * word ("balance 1,234.50"). `plain` is the lower-cased text with ASCII digits and romanized Hindi.
 */
export function findAmount(plain: string): number | null {
  const { tokens, canon } = moneyTokens(plain);
  for (let i = 0; i < canon.length; i++) {
    const read = readNumber(canon, i);
    if (!read) continue;
    const prev = canon[i - 1] ?? '';
    const next = canon[i + read.used] ?? '';
    const words = canon.slice(i, i + read.used);
    const hasMultiplier = words.some((w) => MULTIPLIERS.has(w) || /^\d+(\.\d+)?k$/.test(w));
    const hasCurrency = CURRENCY.test(prev) || CURRENCY.test(next) || tokens[i]!.startsWith('₹');
    const digitsOnly = words.length === 1 && /^\d+$/.test(words[0]!);
    const moneyNear = [canon[i - 2], prev, next, canon[i + read.used + 1]].some((w) => w !== undefined && MONEY_CONTEXT_STRONG.has(w));
    const wordsOnly = words.every((w) => !/^\d/.test(w));
    if (hasCurrency || (hasMultiplier && (!wordsOnly || MONEY_CONTEXT.has(next) || MONEY_CONTEXT.has(prev) || hasCurrency || read.value >= 1000))) {
      return read.value;
    }
    if (digitsOnly && words[0]!.length <= 7 && moneyNear) return read.value;
    const after = canon[i + read.used + 1] ?? '';
    const planNear = PLAN_CONTEXT.has(prev) || PLAN_CONTEXT.has(next) || (PLAN_LINK.has(next) && PLAN_CONTEXT.has(after));
    if (digitsOnly && words[0]!.length <= 5 && read.value >= 10 && planNear) return read.value;
    // Grouped digits or paise ("1,234.50", "2,50,000") read as money beside any money word ("balance").
    const grouped = words.length === 1 && /^\d{1,3}(,\d{2,3})+(\.\d{1,2})?$|^\d+\.\d{2}$/.test(words[0]!);
    if (grouped && (moneyNear || MONEY_CONTEXT.has(prev) || MONEY_CONTEXT.has(next))) return read.value;
    i += read.used - 1;
  }
  return null;
}

/**
 * The number a short answer consists of ("299", "299 ka tha", "it was 599", "dedh sau"): one
 * numeral in at most six words, or with no numeral one run of number words worth 10 or more ("do"
 * alone is also "give"); else null. Only a session that asked for an amount reads it as one.
 */
export function bareNumber(plain: string): number | null {
  if (plain.length > 80) return null; // six words at most: no need to read a long turn
  const tokens = moneyTokens(plain).canon.filter((t) => !CURRENCY.test(t));
  if (tokens.length === 0 || tokens.length > 6) return null;
  const numerals = tokens.filter((t) => /^\d/.test(t));
  if (numerals.length > 1) return null;
  if (numerals.length === 1) {
    const at = tokens.indexOf(numerals[0]!);
    const read = readNumber(tokens, at);
    return read && read.value > 0 ? read.value : null;
  }
  let found: number | null = null;
  for (let i = 0; i < tokens.length; i++) {
    const read = readNumber(tokens, i);
    if (!read || read.value < 10) continue;
    if (found !== null) return null;
    found = read.value;
    i += read.used - 1;
  }
  return found;
}
