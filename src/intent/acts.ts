// Dialogue acts, from lexicons over canonical tokens (English, Hindi and Hinglish together: people
// mix them within one turn). The full list, in the order they are decided:
//   CONFIRMATION, DENIAL — a bare yes / no ("haan ji", "theek hai", "nahi", "no thanks")
//   GREETING, THANKS, GOODBYE — a short turn made of those words ("hello", "shukriya", "bye")
//   QUESTION  — a question mark or a question word (what, when, kab, kya, kaise, kitna…)
//   COMPLAINT — a failure described (not working, nahi chal raha, debited, kat gaye, problem…)
//   REQUEST   — asking for an action (please, want, need, chahiye, kar do, block, cancel…)
//   STATEMENT — anything else
import { canonical, type Normalized } from './normalize.ts';

export const DIALOGUE_ACTS = ['CONFIRMATION', 'DENIAL', 'GREETING', 'THANKS', 'GOODBYE', 'QUESTION', 'COMPLAINT', 'REQUEST', 'STATEMENT'] as const;
export type DialogueAct = (typeof DIALOGUE_ACTS)[number];

const set = (words: string) =>
  new Set(
    words
      .split(/\s+/)
      .filter(Boolean)
      .flatMap((w) => canonical(w).split(' ')),
  );
const phrases = (list: string[]) => list.map((p) => p.split(' ').map(canonical).join(' '));

const YES = set(
  'yes yeah yep yup ya yah haan haanji han haa ha ji jee hanji okay ok sure correct right bilkul zaroor jarur theek thik hai sahi done confirm confirmed absolutely definitely please proceed go ahead agreed accha acha achha chalo kar kardo karo do it raise it that is it yes please haan ha ji',
);
const NO = set(
  'no nope nah nahi nhi nahin na mat dont do not never cancel rehne rahne do dijiye not now no thanks thank you thanks zaroorat zarurat nai wrong galat',
);
// Tokens that may accompany a yes/no without making it a new request.
const FILLER = set(
  'chahiye sir madam maam bhai ji please plz kindly it that this the is are please go ahead raise proceed kar do dijiye karo kardo karein kijiye abhi ok okay bas just yes haan hai of course ahead thats',
);
const YES_CORE = set(
  'yes yeah yep yup ya yah haan han haa ha ji jee okay ok sure correct right bilkul zaroor jarur theek sahi confirm confirmed absolutely definitely proceed agreed accha acha achha chalo',
);
const NO_CORE = set('no nope nah nahi nahin na mat dont never cancel galat wrong');
const NO_PHRASES = phrases([
  'not now',
  'do not',
  'rehne do',
  'rahne do',
  'mat karo',
  'nahi chahiye',
  'no need',
  'zaroorat nahi',
  'jarurat nahi',
  'not required',
]);

const GREETING = set('hi hello hey hii helo namaste namaskar namskar pranam good morning afternoon evening salaam salam hola greetings');
const THANKS = set('thanks thank you thankyou dhanyavad dhanyawad shukriya shukria bahut bohot bahot very much so lot a ji sir madam');
const THANKS_CORE = set('thanks thankyou dhanyavad dhanyawad shukriya shukria');
const GOODBYE = set('bye goodbye alvida tata see you later take care good night ok okay ji sir');
const GOODBYE_CORE = set('bye goodbye alvida tata');
const QUESTION = set(
  'what when why how where which who whom whose kya kab kyon kyun kaise kaisa kaisi kahan kaha kitna kitne kitni kaun kisne konsa status can could will would is are does do should may',
);
const QUESTION_LEAD = set('can could will would is are does should may');
const COMPLAINT = set(
  'fas fasa fans fansa not nahi problem issue issues error failed failure fail declined stuck atak atka band down slow drop drops dropping dropped debited deducted kat kata kate charged twice double wrong galat missing lost swallowed retained blocked unable cant cannot couldnt wont didnt doesnt isnt aaya nikle nikla mila mile worst bad poor pareshan pareshani shikayat complaint',
);
const REQUEST = set(
  'please plz kindly want wanted need needs chahiye karo kardo kar dijiye dedo do send bhejo block unblock cancel activate deactivate change update raise file register help madad refund return vapas check batao bataiye',
);

export interface ActResult {
  act: DialogueAct;
  /** For a bare yes/no: which. A turn like "haan, paise nahi nikle" is not bare. */
  yesNo: 'yes' | 'no' | null;
}

function allIn(tokens: string[], ...sets: Set<string>[]): boolean {
  return tokens.every((t) => sets.some((s) => s.has(t)));
}

/** Whether the turn is a bare confirmation or denial, and which. */
export function bareYesNo(tokens: string[]): 'yes' | 'no' | null {
  if (tokens.length === 0 || tokens.length > 6) return null;
  const text = tokens.join(' ');
  const noPhrase = NO_PHRASES.some((p) => text.includes(p));
  const hasNo = noPhrase || tokens.some((t) => NO_CORE.has(t));
  const hasYes = tokens.some((t) => YES_CORE.has(t));
  if (hasNo && allIn(tokens, NO, FILLER, YES)) {
    // "haan nahi chahiye" / "no thanks": a no word anywhere makes it a denial, unless "nahi" is only
    // the negation inside "koi problem nahi" — which cannot be here, since every token is yes/no/filler.
    return 'no';
  }
  if (hasYes && allIn(tokens, YES, FILLER)) return 'yes';
  return null;
}

export function dialogueAct(norm: Normalized, raw: string): ActResult {
  const { tokens } = norm;
  const yesNo = bareYesNo(tokens);
  if (yesNo === 'yes') return { act: 'CONFIRMATION', yesNo };
  if (yesNo === 'no') return { act: 'DENIAL', yesNo };
  if (tokens.length > 0 && tokens.length <= 5) {
    if (tokens.some((t) => GREETING.has(t)) && allIn(tokens, GREETING, FILLER, THANKS)) return { act: 'GREETING', yesNo: null };
    if (tokens.some((t) => THANKS_CORE.has(t)) && allIn(tokens, THANKS, FILLER, GOODBYE)) return { act: 'THANKS', yesNo: null };
    if (tokens.some((t) => GOODBYE_CORE.has(t)) && allIn(tokens, GOODBYE, FILLER, THANKS)) return { act: 'GOODBYE', yesNo: null };
  }
  if (/[?？]\s*$/.test(raw) || (tokens[0] !== undefined && QUESTION_LEAD.has(tokens[0])) || tokens.some((t) => QUESTION.has(t) && !QUESTION_LEAD.has(t))) {
    return { act: 'QUESTION', yesNo: null };
  }
  if (tokens.some((t) => COMPLAINT.has(t))) return { act: 'COMPLAINT', yesNo: null };
  if (tokens.some((t) => REQUEST.has(t))) return { act: 'REQUEST', yesNo: null };
  return { act: 'STATEMENT', yesNo: null };
}

const ORDINALS: [Set<string>, number][] = [
  [set('first 1st 1 pehla pehli pehle pahla pahli pahle ek'), 0],
  [set('second 2nd 2 two dusra dusri doosra doosri dusre doosre do'), 1],
  [set('third 3rd 3 three teesra teesri tisra tisri teen tin'), 2],
];
const LAST = set('last aakhri akhri');
const CHOICE_FILLER = set('the one wala wali wale vala vali vale option number no hai please plz ji sir madam vo wo woh voh yeh ye that this is it mera meri');

/**
 * An answer that picks from options read to the caller ("the second one", "pehla wala", "option
 * 2", "last"): the option's index (−1 for the last), else null. Only a short turn of an ordinal and
 * filler words; only a session that offered options reads it.
 */
export function ordinalChoice(tokens: string[]): number | null {
  if (tokens.length === 0 || tokens.length > 4) return null;
  let found: number | null = null;
  for (const t of tokens) {
    const hit = LAST.has(t) ? -1 : ORDINALS.find(([words]) => words.has(t))?.[1];
    if (hit !== undefined) {
      if (found !== null) return null;
      found = hit;
    } else if (!CHOICE_FILLER.has(t)) return null;
  }
  return found;
}
