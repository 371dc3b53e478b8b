// Dates resolved to ISO `YYYY-MM-DD` in Asia/Kolkata (UTC+5:30, no daylight saving).
// Hindi/Hinglish relative words are read here (chrono-node has no Hindi); English goes to chrono-node,
// except "day after tomorrow" / "day before yesterday", which chrono reads as tomorrow/yesterday.
//
// "kal" means both yesterday and tomorrow (and "parso" both two days ago and in two days). It is
// resolved by the tense of the turn: a past-tense cue (gaya, hua, tha, kata, nikle, kiya, diya…)
// gives the past, a future cue (ga/gi/ge endings, tak, hoga, karna, will…) the future. With neither,
// the past wins: in a support conversation a complaint about "kal" is about something that happened.
// The same rule places a weekday or a day of the month said without "last"/"next" or a year
// ("monday ko paise kat gaye", "on 25th December the ATM failed"): chrono-node picks the nearest,
// often the coming one; a past (or tenseless) turn takes the latest one not after today, a future
// turn the first one not before it. Hindi weekdays (somvar…ravivar) and "N din pehle / baad"
// ("do din pehle", "3 hafte pehle", and "2 din mein" in a future turn) are read here.
import { createRequire } from 'node:module';
import type * as Chrono from 'chrono-node';
import { readNumber } from './amounts.ts';
import { canonical } from './normalize.ts';

// chrono-node (~0.2 s of CPU to load) is loaded at the first date it is asked to read, not with the
// gateway; its CommonJS build, so that findDate stays synchronous.
const load = createRequire(import.meta.url);
let chrono: typeof Chrono | undefined;

const IST_OFFSET_MIN = 330;

/**
 * The words without one of which chrono-node's English parsers find nothing (v2: its weekday,
 * month and time-unit dictionaries, `weekend`/`weekday`, and its casual words), beside digits: a turn with neither is
 * not handed to chrono, which took ~0.15 ms of every English turn (~12% of an intent turn's p50)
 * to find nothing. test/intent/entities.test.ts holds the list against chrono's own dictionaries.
 */
export const CHRONO_WORDS = new Set([
  // weekdays (and the weekday parser's own two) and months
  'weekend',
  'weekday',
  'sun',
  'sunday',
  'mon',
  'monday',
  'tue',
  'tues',
  'tuesday',
  'wed',
  'wednesday',
  'thu',
  'thur',
  'thurs',
  'thursday',
  'fri',
  'friday',
  'sat',
  'saturday',
  'jan',
  'january',
  'feb',
  'february',
  'mar',
  'march',
  'apr',
  'april',
  'may',
  'jun',
  'june',
  'jul',
  'july',
  'aug',
  'august',
  'sep',
  'sept',
  'september',
  'oct',
  'october',
  'nov',
  'november',
  'dec',
  'december',
  // time units, abbreviations included
  's',
  'sec',
  'second',
  'seconds',
  'm',
  'min',
  'mins',
  'minute',
  'minutes',
  'h',
  'hr',
  'hrs',
  'hour',
  'hours',
  'd',
  'day',
  'days',
  'w',
  'week',
  'weeks',
  'mo',
  'mos',
  'month',
  'months',
  'qtr',
  'quarter',
  'quarters',
  'y',
  'yr',
  'year',
  'years',
  // casual days and times
  'now',
  'today',
  'tonight',
  'tomorrow',
  'overmorrow',
  'tmr',
  'tmrw',
  'yesterday',
  'night',
  'morning',
  'afternoon',
  'evening',
  'midnight',
  'midday',
  'noon',
]);

/** Whether chrono-node could find a date in `plain` at all: a digit, or one of CHRONO_WORDS. */
export function mayHoldEnglishDate(plain: string): boolean {
  if (/\d/.test(plain)) return true;
  for (const word of plain.toLowerCase().split(/[^a-z]+/)) if (CHRONO_WORDS.has(word)) return true;
  return false;
}

/** The calendar day in Asia/Kolkata of an instant, shifted by `days`, as YYYY-MM-DD. */
export function istDay(nowMs: number, days = 0): string {
  return new Date(nowMs + IST_OFFSET_MIN * 60_000 + days * 86_400_000).toISOString().slice(0, 10);
}

const PAST = new Set(
  [
    'tha',
    'thi',
    'the',
    'gaya',
    'gaye',
    'gayi',
    'hua',
    'hui',
    'hue',
    'kiya',
    'kiye',
    'ki',
    'diya',
    'diye',
    'di',
    'liya',
    'liye',
    'kata',
    'kate',
    'kati',
    'nikla',
    'nikle',
    'nikli',
    'nikala',
    'nikale',
    'aya',
    'aaya',
    'aye',
    'aaye',
    'aayi',
    'ayi',
    'mila',
    'mile',
    'mili',
    'was',
    'were',
    'did',
    'happened',
    'tried',
    'went',
    'got',
    'deducted',
    'debited',
    'failed',
    'withdrew',
    'yesterday',
    'last',
    'ago',
    'pehle',
    'pahle',
    'se',
    'karaya',
    'karwaya',
  ].map(canonical),
);
const FUTURE = new Set(
  [
    'ga',
    'gi',
    'ge',
    'tak',
    'hoga',
    'hogi',
    'honge',
    'karna',
    'karunga',
    'karungi',
    'karenge',
    'aunga',
    'aaunga',
    'aayega',
    'ayega',
    'milega',
    'milegi',
    'will',
    'tomorrow',
    'next',
    'shall',
    'going',
    'chahiye',
    'dena',
    'dijiye',
    'karo',
    'kardo',
    'remind',
    'set',
    'baje',
    'bajhe',
    'subah',
    'shaam',
    'sham',
    'raat',
  ].map(canonical),
);

function tense(tokens: string[]): 'past' | 'future' | null {
  let past = 0;
  let future = 0;
  for (const t of tokens) {
    if (PAST.has(t)) past++;
    if (FUTURE.has(t) || /[a-z]{3,}(ga|gi|ge)$/.test(t)) future++;
  }
  if (past === future) return past === 0 ? null : 'past';
  return past > future ? 'past' : 'future';
}

// Words of the turn are looked up in Maps, never as keys of an object literal (whose prototype
// answers "constructor" or "toString").
const RELATIVE = new Map(
  [
    ['aaj', 0],
    ['abhi', 0],
    ['aj', 0],
  ].map(([w, n]) => [canonical(w as string), n as number]),
);
const AMBIGUOUS = new Map(
  [
    ['kal', 1],
    ['parso', 2],
    ['parson', 2],
    ['narso', 3],
  ].map(([w, n]) => [canonical(w as string), n as number]),
);

/** Hindi weekday names (romanized or transliterated from Devanagari) → day of the week, Sunday 0. */
const WEEKDAYS = new Map(
  (
    [
      ['somvar', 1],
      ['somwar', 1],
      ['mangalvar', 2],
      ['mangalwar', 2],
      ['budhvar', 3],
      ['budhwar', 3],
      ['guruvar', 4],
      ['guruwar', 4],
      ['brihaspativar', 4],
      ['shukravar', 5],
      ['shukrawar', 5],
      ['shanivar', 6],
      ['shaniwar', 6],
      ['ravivar', 0],
      ['raviwar', 0],
      ['itvar', 0],
      ['itwar', 0],
      ['etvar', 0],
    ] as const
  ).map(([w, d]) => [canonical(w), d]),
);
/** "din" (days) and "hafte" (weeks), with the words that say before or after. */
const UNITS = new Map(
  [
    ['din', 1],
    ['dino', 1],
    ['dinon', 1],
    ['hafte', 7],
    ['hafta', 7],
    ['hafton', 7],
  ].map(([w, n]) => [canonical(w as string), n as number]),
);
const BEFORE = new Set(['pehle', 'pahle', 'pehele', 'phle', 'purana'].map(canonical));
const AFTER = new Set(['baad', 'bad'].map(canonical));
/** "2 din mein" is "in two days" only in a future turn ("2 din mein 500 kate" is a span). */
const WITHIN = new Set(['mein', 'me', 'main'].map(canonical));

const dayOfWeek = (nowMs: number) => new Date(nowMs + IST_OFFSET_MIN * 60_000).getUTCDay();

/** "do din pehle", "3 hafte pehle", "5 din baad": days from today, or null. */
function daysFromToday(tokens: string[], when: 'past' | 'future'): number | null {
  for (let i = 0; i < tokens.length; i++) {
    const n = readNumber(tokens, i);
    if (!n || n.value <= 0 || n.value > 366 || !Number.isInteger(n.value)) continue;
    const unit = UNITS.get(tokens[i + n.used] ?? '');
    const side = tokens[i + n.used + 1] ?? '';
    if (unit === undefined) continue;
    if (BEFORE.has(side)) return -n.value * unit;
    if (AFTER.has(side) || (when === 'future' && WITHIN.has(side))) return n.value * unit;
  }
  return null;
}

/** A date chrono-node placed, moved to the past or the future the turn's tense says (see above). */
function alignToTense(iso: string, kind: 'weekday' | 'year', when: 'past' | 'future', today: string): string {
  const [y, m, d] = iso.split('-').map(Number) as [number, number, number];
  const shift = (yy: number, dd: number) => new Date(Date.UTC(yy, m - 1, dd)).toISOString().slice(0, 10);
  if (when === 'past' && iso > today) return kind === 'weekday' ? shift(y, d - 7) : m === 2 && d === 29 ? iso : shift(y - 1, d);
  if (when === 'future' && iso < today) return kind === 'weekday' ? shift(y, d + 7) : m === 2 && d === 29 ? iso : shift(y + 1, d);
  return iso;
}

/**
 * The first date in the turn. `tokens` are the canonical tokens (see normalize), `plain` the
 * lower-cased romanized text (for chrono-node), `nowMs` the reference instant.
 */
export function findDate(plain: string, tokens: string[], nowMs: number): string | null {
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const today = RELATIVE.get(t);
    if (today !== undefined) return istDay(nowMs, today);
    const n = AMBIGUOUS.get(t);
    if (n !== undefined) return istDay(nowMs, tense(tokens) === 'future' ? n : -n);
  }
  const when = tense(tokens) ?? 'past';
  const offset = daysFromToday(tokens, when);
  if (offset !== null) return istDay(nowMs, offset);
  for (const t of tokens) {
    const target = WEEKDAYS.get(t);
    if (target === undefined) continue;
    const dow = dayOfWeek(nowMs);
    return istDay(nowMs, when === 'past' ? -((dow - target + 7) % 7) : (target - dow + 7) % 7);
  }
  if (/\bday after tomorrow\b/.test(plain)) return istDay(nowMs, 2);
  if (/\bday before yesterday\b/.test(plain)) return istDay(nowMs, -2);
  if (!/[a-z]{3}|\d{1,4}[/-]\d{1,2}/.test(plain) || !mayHoldEnglishDate(plain)) return null;
  chrono ??= load('chrono-node') as typeof Chrono;
  const results = chrono.en.GB.parse(plain, { instant: new Date(nowMs), timezone: IST_OFFSET_MIN });
  for (const r of results) {
    // Bare times ("9 am") and bare numbers are not dates.
    if (!r.start.isCertain('day') && !r.start.isCertain('weekday') && !/today|tomorrow|yesterday|tonight|week|month/.test(r.text)) continue;
    const year = r.start.get('year');
    const month = r.start.get('month');
    const day = r.start.get('day');
    if (year === null || month === null || day === null) continue;
    const iso = `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
    // Said with "last", "next", "ago"... or with its year, the date is what chrono read.
    if (/\b(last|next|this|coming|previous|ago|later|from now|today|tomorrow|yesterday|tonight)\b/.test(r.text)) return iso;
    if (r.start.isCertain('weekday') && !r.start.isCertain('day')) return alignToTense(iso, 'weekday', when, istDay(nowMs));
    if (!r.start.isCertain('year')) return alignToTense(iso, 'year', when, istDay(nowMs));
    return iso;
  }
  return null;
}
