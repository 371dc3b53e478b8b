// Dates resolved to ISO `YYYY-MM-DD` in Asia/Kolkata (UTC+5:30, no daylight saving).
// Hindi/Hinglish relative words are read here (chrono-node has no Hindi); English goes to chrono-node,
// except "day after tomorrow" / "day before yesterday", which chrono reads as tomorrow/yesterday.
//
// "kal" means both yesterday and tomorrow (and "parso" both two days ago and in two days). It is
// resolved by the tense of the turn: a past-tense cue (gaya, hua, tha, kata, nikle, kiya, diya…)
// gives the past, a future cue (ga/gi/ge endings, tak, hoga, karna, will…) the future. With neither,
// the past wins: in a support conversation a complaint about "kal" is about something that happened.
import * as chrono from 'chrono-node';
import { canonical } from './normalize.ts';

const IST_OFFSET_MIN = 330;

/** The calendar day in Asia/Kolkata of an instant, shifted by `days`, as YYYY-MM-DD. */
export function istDay(nowMs: number, days = 0): string {
  return new Date(nowMs + IST_OFFSET_MIN * 60_000 + days * 86_400_000).toISOString().slice(0, 10);
}

const PAST = new Set(
  ['tha', 'thi', 'the', 'gaya', 'gaye', 'gayi', 'hua', 'hui', 'hue', 'kiya', 'kiye', 'ki', 'diya', 'diye', 'di', 'liya', 'liye', 'kata', 'kate', 'kati', 'nikla', 'nikle',
    'nikli', 'nikala', 'nikale', 'aya', 'aaya', 'aye', 'aaye', 'aayi', 'ayi', 'mila', 'mile', 'mili', 'was', 'were', 'did', 'happened', 'tried', 'went', 'got', 'deducted', 'debited',
    'failed', 'withdrew', 'yesterday', 'last', 'ago', 'pehle', 'pahle', 'se', 'karaya', 'karwaya'].map(canonical),
);
const FUTURE = new Set(
  ['ga', 'gi', 'ge', 'tak', 'hoga', 'hogi', 'honge', 'karna', 'karunga', 'karungi', 'karenge', 'aunga', 'aaunga', 'aayega', 'ayega', 'milega', 'milegi', 'will', 'tomorrow',
    'next', 'shall', 'going', 'chahiye', 'dena', 'dijiye', 'karo', 'kardo', 'remind', 'set', 'baje', 'bajhe', 'subah', 'shaam', 'sham', 'raat'].map(canonical),
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

const RELATIVE: Record<string, number> = {
  [canonical('aaj')]: 0, [canonical('abhi')]: 0, [canonical('aj')]: 0,
};
const AMBIGUOUS: Record<string, number> = { [canonical('kal')]: 1, [canonical('parso')]: 2, [canonical('parson')]: 2, [canonical('narso')]: 3 };

/**
 * The first date in the turn. `tokens` are the canonical tokens (see normalize), `plain` the
 * lower-cased romanized text (for chrono-node), `nowMs` the reference instant.
 */
export function findDate(plain: string, tokens: string[], nowMs: number): string | null {
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (RELATIVE[t] !== undefined) return istDay(nowMs, RELATIVE[t]);
    if (AMBIGUOUS[t] !== undefined) {
      const n = AMBIGUOUS[t]!;
      return istDay(nowMs, tense(tokens) === 'future' ? n : -n);
    }
  }
  if (/\bday after tomorrow\b/.test(plain)) return istDay(nowMs, 2);
  if (/\bday before yesterday\b/.test(plain)) return istDay(nowMs, -2);
  if (!/[a-z]{3}|\d{1,4}[/-]\d{1,2}/.test(plain)) return null;
  const results = chrono.en.GB.parse(plain, { instant: new Date(nowMs), timezone: IST_OFFSET_MIN });
  for (const r of results) {
    // Bare times ("9 am") and bare numbers are not dates.
    if (!r.start.isCertain('day') && !r.start.isCertain('weekday') && !/today|tomorrow|yesterday|tonight|week|month/.test(r.text)) continue;
    const year = r.start.get('year');
    const month = r.start.get('month');
    const day = r.start.get('day');
    if (year === null || month === null || day === null) continue;
    return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
  }
  return null;
}
