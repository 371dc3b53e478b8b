// Text normalization shared by every stage: Devanagari digits to ASCII, Devanagari script
// transliterated to a romanized form, and Hinglish spelling variants folded onto one canonical
// spelling, so "पैसे नहीं निकले", "paise nahi nikle" and "pese nhi nikle" give the same tokens.
// Training examples and incoming turns go through the same function, so what matters is that it is
// consistent, not that it is linguistically exact.

const DEVANAGARI_DIGITS = /[\u0966-\u096F]/g;

/** ० १ … ९ → 0 1 … 9 (everything else unchanged). */
export function asciiDigits(text: string): string {
  return text.replace(DEVANAGARI_DIGITS, (d) => String(d.charCodeAt(0) - 0x0966));
}

const CONSONANTS: Record<string, string> = {
  क: 'k',
  ख: 'kh',
  ग: 'g',
  घ: 'gh',
  ङ: 'n',
  च: 'ch',
  छ: 'chh',
  ज: 'j',
  झ: 'jh',
  ञ: 'n',
  ट: 't',
  ठ: 'th',
  ड: 'd',
  ढ: 'dh',
  ण: 'n',
  त: 't',
  थ: 'th',
  द: 'd',
  ध: 'dh',
  न: 'n',
  प: 'p',
  फ: 'ph',
  ब: 'b',
  भ: 'bh',
  म: 'm',
  य: 'y',
  र: 'r',
  ल: 'l',
  व: 'v',
  श: 'sh',
  ष: 'sh',
  स: 's',
  ह: 'h',
  ळ: 'l',
  क़: 'q',
  ख़: 'kh',
  ग़: 'g',
  ज़: 'z',
  ड़: 'r',
  ढ़: 'rh',
  फ़: 'f',
};
const VOWELS: Record<string, string> = {
  अ: 'a',
  आ: 'aa',
  इ: 'i',
  ई: 'ee',
  उ: 'u',
  ऊ: 'oo',
  ए: 'e',
  ऐ: 'ai',
  ओ: 'o',
  औ: 'au',
  ऋ: 'ri',
  ऑ: 'o',
};
const MATRAS: Record<string, string> = {
  'ा': 'aa',
  'ि': 'i',
  'ी': 'ee',
  'ु': 'u',
  'ू': 'oo',
  'े': 'e',
  'ै': 'ai',
  'ो': 'o',
  'ौ': 'au',
  'ृ': 'ri',
  'ॉ': 'o',
  'ॅ': 'e',
};
const NASAL = new Set(['ं', 'ँ']);
const VIRAMA = '्';
const NUKTA = '़';

const isDeva = (c: string | undefined): boolean => c !== undefined && c >= '\u0900' && c <= '\u097F';

/**
 * Romanizes Devanagari. The inherent vowel of a consonant is dropped at the end of a word and in
 * the middle of one when the previous syllable ends in a vowel and the next consonant carries its
 * own vowel sign (the usual schwa deletion: निकले → nikle, करना → karna, कटे → kate).
 */
export function transliterate(text: string): string {
  if (!/[\u0900-\u097F]/.test(text)) return text;
  const chars = [...text.normalize('NFC')];
  // Fold nukta forms into one character key.
  const units: string[] = [];
  for (let i = 0; i < chars.length; i++) {
    if (chars[i + 1] === NUKTA && CONSONANTS[chars[i]! + NUKTA] !== undefined) {
      units.push(chars[i]! + NUKTA);
      i++;
    } else if (chars[i] !== NUKTA) units.push(chars[i]!);
  }
  let out = '';
  let wordStart = true;
  let lastVowel = false;
  for (let i = 0; i < units.length; i++) {
    const ch = units[i]!;
    const cons = CONSONANTS[ch];
    if (cons !== undefined) {
      out += cons;
      const next = units[i + 1];
      if (next === VIRAMA) {
        i++;
        lastVowel = false;
      } else if (next !== undefined && MATRAS[next] !== undefined) {
        out += MATRAS[next];
        i++;
        lastVowel = true;
      } else {
        const afterNext = units[i + 2];
        const wordEnd = !isDeva(next) || (next !== undefined && (VOWELS[next] !== undefined) === false && CONSONANTS[next] === undefined && !NASAL.has(next));
        const nextHasSign = next !== undefined && CONSONANTS[next] !== undefined && afterNext !== undefined && MATRAS[afterNext] !== undefined;
        if (NASAL.has(next ?? '')) {
          out += 'a';
          lastVowel = true;
        } else if (wordEnd || (!wordStart && lastVowel && nextHasSign)) {
          lastVowel = false;
        } else {
          out += 'a';
          lastVowel = true;
        }
      }
      wordStart = false;
      continue;
    }
    if (VOWELS[ch] !== undefined) {
      out += VOWELS[ch];
      lastVowel = true;
      wordStart = false;
    } else if (MATRAS[ch] !== undefined) {
      out += MATRAS[ch];
      lastVowel = true;
    } else if (NASAL.has(ch)) out += 'n';
    else if (ch === 'ः') out += 'h';
    else if (ch === '।' || ch === '॥') {
      out += '.';
      wordStart = true;
    } else if (ch === VIRAMA) continue;
    else {
      out += ch;
      wordStart = true;
      lastVowel = false;
    }
  }
  return out;
}

/** Hinglish spellings folded onto one form (applied after the phonetic folding below). */
const VARIANTS: Record<string, string> = {
  nhi: 'nahi',
  nahin: 'nahi',
  nai: 'nahi',
  nahee: 'nahi',
  nhin: 'nahi',
  ni: 'nahi',
  naa: 'na',
  h: 'hai',
  he: 'hai',
  hain: 'hai',
  hei: 'hai',
  hy: 'hai',
  pese: 'paise',
  paisa: 'paise',
  pesa: 'paise',
  paisaa: 'paise',
  paise: 'paise',
  paisee: 'paise',
  rupay: 'rupaye',
  rupye: 'rupaye',
  rupaiye: 'rupaye',
  rupee: 'rupaye',
  rupees: 'rupaye',
  rs: 'rupaye',
  inr: 'rupaye',
  rupae: 'rupaye',
  kya: 'kya',
  kia: 'kya',
  ky: 'kya',
  kyu: 'kyon',
  kyun: 'kyon',
  kyo: 'kyon',
  q: 'kyon',
  mera: 'mera',
  mra: 'mera',
  meraa: 'mera',
  mere: 'mere',
  mre: 'mere',
  meri: 'meri',
  mri: 'meri',
  hua: 'hua',
  huaa: 'hua',
  hoa: 'hua',
  hue: 'hue',
  huye: 'hue',
  gya: 'gaya',
  gaya: 'gaya',
  gye: 'gaye',
  gaye: 'gaye',
  gyi: 'gayi',
  gai: 'gayi',
  gayi: 'gayi',
  ho: 'ho',
  hoga: 'hoga',
  hogi: 'hogi',
  krna: 'karna',
  karna: 'karna',
  kro: 'karo',
  karo: 'karo',
  krdo: 'kardo',
  kardo: 'kardo',
  kr: 'kar',
  kar: 'kar',
  raha: 'raha',
  rha: 'raha',
  rhaa: 'raha',
  rahi: 'rahi',
  rhi: 'rahi',
  rahe: 'rahe',
  rhe: 'rahe',
  chal: 'chal',
  chl: 'chal',
  chalta: 'chalta',
  ok: 'okay',
  okk: 'okay',
  okey: 'okay',
  k: 'okay',
  kk: 'okay',
  okie: 'okay',
  pls: 'please',
  plz: 'please',
  plss: 'please',
  plez: 'please',
  pleas: 'please',
  thx: 'thanks',
  thanx: 'thanks',
  tnx: 'thanks',
  thnx: 'thanks',
  thank: 'thanks',
  thnks: 'thanks',
  ty: 'thanks',
  u: 'you',
  ur: 'your',
  r: 'are',
  n: 'and',
  acc: 'account',
  acct: 'account',
  a_c: 'account',
  ac: 'account',
  khata: 'khata',
  khate: 'khata',
  khaata: 'khata',
  amt: 'amount',
  txn: 'transaction',
  trxn: 'transaction',
  tranzaction: 'transaction',
  transection: 'transaction',
  trans: 'transaction',
  atm: 'atm',
  netwrk: 'network',
  ntwrk: 'network',
  netwok: 'network',
  nw: 'network',
  networ: 'network',
  recharj: 'recharge',
  rechrge: 'recharge',
  richarge: 'recharge',
  rchg: 'recharge',
  sim: 'sim',
  simcard: 'sim card',
  mob: 'mobile',
  mobil: 'mobile',
  fone: 'phone',
  phn: 'phone',
  ph: 'phone',
  msg: 'message',
  sms: 'sms',
  dbt: 'debit',
  debitted: 'debited',
  deducted: 'deducted',
  deduct: 'deduct',
  dedcted: 'deducted',
  haan: 'haan',
  han: 'haan',
  ha: 'haan',
  haa: 'haan',
  hn: 'haan',
  hna: 'haan',
  hanji: 'haan ji',
  haanji: 'haan ji',
  thik: 'theek',
  thek: 'theek',
  theek: 'theek',
  tik: 'theek',
  thik_hai: 'theek hai',
  bhi: 'bhi',
  bi: 'bhi',
  abhi: 'abhi',
  abi: 'abhi',
  kab: 'kab',
  kb: 'kab',
  tak: 'tak',
  tk: 'tak',
  wapas: 'vapas',
  vapis: 'vapas',
  wapis: 'vapas',
  vaapas: 'vapas',
  gae: 'gaye',
  gayee: 'gaye',
  gaee: 'gayi',
  parson: 'parso',
  parsun: 'parso',
  parsoan: 'parso',
  narson: 'narso',
  netavark: 'network',
  netvark: 'network',
  signl: 'signal',
  sigal: 'signal',
  sinal: 'signal',
  ataiem: 'atm',
  etiem: 'atm',
  eteem: 'atm',
  atem: 'atm',
  aj: 'aaj',
  aja: 'aaj',
};

/** Phonetic folding of romanized Hindi/English spellings: vowel length, w/v, ph/f, z/j. */
function fold(token: string): string {
  const t = token
    .replace(/(.)\1{2,}/g, '$1$1') // "nahiii" → "nahii"
    .replace(/aa/g, 'a')
    .replace(/ee/g, 'i')
    .replace(/oo/g, 'u')
    .replace(/ii/g, 'i')
    .replace(/w/g, 'v')
    .replace(/ph/g, 'f')
    .replace(/z/g, 'j')
    .replace(/c(?!h)/g, 'k')
    .replace(/kk/g, 'k');
  return t;
}

const FOLDED_VARIANTS: Map<string, string> = new Map();
for (const [k, v] of Object.entries(VARIANTS)) {
  FOLDED_VARIANTS.set(k, v);
  FOLDED_VARIANTS.set(fold(k), v);
}

/** One token's canonical form: variant table, then phonetic folding. */
export function canonical(token: string): string {
  const direct = FOLDED_VARIANTS.get(token);
  if (direct !== undefined) return direct.split(' ').map(fold).join(' ');
  const folded = fold(token);
  const v = FOLDED_VARIANTS.get(folded);
  return v !== undefined ? v.split(' ').map(fold).join(' ') : folded;
}

export interface Normalized {
  /** The text with ASCII digits and Devanagari romanized, lower-case (entities read this). */
  plain: string;
  /** Canonical word tokens (classification reads these). */
  tokens: string[];
  /** tokens joined by one space. */
  text: string;
}

const CACHE_LIMIT = 4096;
const tokenCache = new Map<string, string>();

function canonicalCached(raw: string): string {
  let c = tokenCache.get(raw);
  if (c === undefined) {
    c = canonical(raw);
    if (tokenCache.size >= CACHE_LIMIT) tokenCache.clear();
    tokenCache.set(raw, c);
  }
  return c;
}

export function normalize(text: string): Normalized {
  const plain = transliterate(asciiDigits(text.normalize('NFC'))).toLowerCase();
  const tokens: string[] = [];
  for (const raw of plain.replace(/[’']/g, '').split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length === 0) continue;
    for (const t of canonicalCached(raw).split(' ')) if (t) tokens.push(t);
  }
  return { plain, tokens, text: tokens.join(' ') };
}

/**
 * Whether two words are at most one edit apart (a substitution, an insertion, a deletion or a
 * swap of neighbours): strip the common prefix and suffix and look at what is left. Linear and
 * allocation-free, because the matcher asks it for every unknown word of every turn.
 */
export function withinOneEdit(a: string, b: string): boolean {
  const la = a.length;
  const lb = b.length;
  if (la - lb > 1 || lb - la > 1) return false;
  let i = 0;
  while (i < la && i < lb && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  let j = 0;
  while (j < la - i && j < lb - i && a.charCodeAt(la - 1 - j) === b.charCodeAt(lb - 1 - j)) j++;
  const restA = la - i - j;
  const restB = lb - i - j;
  if (restA <= 1 && restB <= 1) return true;
  return restA === 2 && restB === 2 && a[i] === b[i + 1] && a[i + 1] === b[i];
}
