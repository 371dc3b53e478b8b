// Text for the offline recogniser's language models (pure): sentences brought to the words a
// recogniser's dictionary spells (lower case, numbers as spoken words, "didnt" as "didn't"), and the
// phrases a caller answers with when the agent expects something: a yes or no, an amount, digits.
// language-models.ts builds the models from them; src/voice/recognition.ts says which a call needs.

/** What the agent waits for: the shape of the next answer (null: anything). */
export type Expectation = 'yes_no' | 'amount' | 'digits';
export const EXPECTATIONS: readonly Expectation[] = ['yes_no', 'amount', 'digits'];

const ONES = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const TEENS = ['ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];

/** Below a thousand, in words ("one hundred twenty five"); '' for 0. */
function hundreds(n: number): string {
  const parts: string[] = [];
  if (n >= 100) parts.push(ONES[Math.floor(n / 100)]!, 'hundred');
  const r = n % 100;
  if (r >= 20) parts.push(TENS[Math.floor(r / 10)]!, ...(r % 10 ? [ONES[r % 10]!] : []));
  else if (r >= 10) parts.push(TEENS[r - 10]!);
  else if (r > 0) parts.push(ONES[r]!);
  return parts.join(' ');
}

/**
 * A whole number as an Indian English speaker says it: "five thousand", "two lakh fifty thousand",
 * "fifteen hundred" for round hundreds between 1,100 and 9,900 that are not whole thousands.
 */
export function numberWords(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) return '';
  if (n === 0) return 'zero';
  if (n >= 1100 && n < 10_000 && n % 100 === 0 && n % 1000 !== 0) return `${hundreds(n / 100)} hundred`;
  const parts: string[] = [];
  const crore = Math.floor(n / 10_000_000);
  if (crore) parts.push(`${numberWords(crore)} crore`);
  const lakh = Math.floor((n % 10_000_000) / 100_000);
  if (lakh) parts.push(`${hundreds(lakh)} lakh`);
  const thousand = Math.floor((n % 100_000) / 1000);
  if (thousand) parts.push(`${hundreds(thousand)} thousand`);
  const rest = n % 1000;
  if (rest) parts.push(hundreds(rest));
  return parts.join(' ');
}

/** Runs of digits longer than this are read digit by digit (a phone or account number), shorter as a number. */
const NUMBER_DIGITS = 7;

/**
 * A sentence as the recogniser's words: lower case, Latin letters and apostrophes only (other
 * scripts dropped: the English model cannot say them), numbers spoken ("rs 5,000" → "rs five
 * thousand"), null when no word is left.
 */
export function corpusLine(text: string): string | null {
  const spoken = text
    .toLowerCase()
    .replace(/(\d),(?=\d)/g, '$1')
    .replace(/\d+/g, (d) => (d.length >= NUMBER_DIGITS ? [...d].map((c) => ONES[Number(c)]).join(' ') : ` ${numberWords(Number(d))} `))
    .replace(/[’`]/g, "'")
    .replace(/[^a-z' ]+/g, ' ')
    .replace(/(^|\s)'+|'+(?=\s|$)/g, ' ');
  const words = spoken.split(/\s+/).filter(Boolean);
  return words.length > 0 ? words.join(' ') : null;
}

/** The apostrophe a dictionary spells and a typed sentence often drops ("didnt" → "didn't"). */
export function withApostrophe(word: string, known: (w: string) => boolean): string {
  if (known(word) || word.includes("'")) return word;
  for (const tail of ['nt', 's', 're', 've', 'll', 'd', 'm']) {
    if (word.length > tail.length + 1 && word.endsWith(tail)) {
      const cut = word.length - tail.length + (tail === 'nt' ? 1 : 0);
      const spelled = `${word.slice(0, cut)}'${word.slice(cut)}`;
      if (known(spelled)) return spelled;
    }
  }
  return word;
}

const YES = [
  'yes',
  'yeah',
  'yes please',
  'yes go ahead',
  'yes do it',
  'yes raise it',
  'yes that is right',
  'yes please do',
  'sure',
  'okay',
  'ok',
  'correct',
  'right',
  'go ahead',
  'please do',
  'of course',
  'haan',
  'haan ji',
  'ji haan',
  'theek hai',
];
const NO = [
  'no',
  'no thanks',
  'no thank you',
  'not now',
  'no need',
  'no do not',
  "no don't",
  'nope',
  'nahi',
  'nahi ji',
  'no it is fine',
  'cancel it',
  'not required',
];

/** Phrases a caller answers a yes/no question with. */
export function yesNoPhrases(): string[] {
  return [...YES, ...NO];
}

/** Round amounts a caller names, with and without the currency ("two thousand rupees", "it was fifteen hundred"). */
export function amountPhrases(): string[] {
  const amounts = [
    ...[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 25, 50].map((n) => n * 100),
    ...[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 25, 50].map((n) => n * 1000),
    1500,
    2500,
    3500,
    7500,
    100_000,
    199,
    249,
    299,
    399,
    499,
    599,
    999,
  ];
  const out: string[] = [];
  for (const a of amounts) {
    const w = numberWords(a);
    out.push(w, `${w} rupees`, `rupees ${w}`, `it was ${w}`, `it was ${w} rupees`, `${w} rupees only`);
  }
  return out;
}

/** Digits read one by one, in the runs callers read numbers in. */
export function digitPhrases(): string[] {
  const out: string[] = [];
  for (let i = 0; i < 60; i++) {
    const n = (i * 7919 + 104729) % 100_000;
    out.push(
      String(n)
        .padStart(5, String(i % 10))
        .split('')
        .map((c) => ONES[Number(c)])
        .join(' '),
    );
  }
  out.push(...ONES, 'double five', 'triple nine', 'oh');
  return out;
}

/** The phrases of one expectation. */
export function expectedPhrases(expect: Expectation): string[] {
  return expect === 'yes_no' ? yesNoPhrases() : expect === 'amount' ? amountPhrases() : digitPhrases();
}
