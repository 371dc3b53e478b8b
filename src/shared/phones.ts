// libphonenumber-js with its `max` metadata (the default metadata accepts 12-digit account numbers
// as phones), loaded at its first use, not with the gateway: intent's entities and the voice call's
// `to` need it, most requests do not. Its CommonJS build, so that its callers stay synchronous.
import { createRequire } from 'node:module';
import type * as Phones from 'libphonenumber-js/max';

const load = createRequire(import.meta.url);
let loaded: typeof Phones | undefined;

export function phoneNumbers(): typeof Phones {
  return (loaded ??= load('libphonenumber-js/max') as typeof Phones);
}

/**
 * A caller id as a route's or a call's `from` may be written: E.164 (`+918047491899`), or an Indian
 * number in its national form, 0 and ten digits (`08047491899`), as Exotel writes ExoPhones.
 */
export const CALLER_ID_PATTERN = '^(\\+[1-9][0-9]{6,14}|0[1-9][0-9]{9})$';

/** A caller id in E.164 (`0XXXXXXXXXX` read as an Indian number), for comparing two ways of writing one. */
export function callerIdE164(id: string): string {
  return /^0[1-9][0-9]{9}$/.test(id) ? `+91${id.slice(1)}` : id;
}

/** Whether a caller id is a valid number (a national `0…` one as India's), not only the right shape. */
export function validCallerId(id: string): boolean {
  return new RegExp(CALLER_ID_PATTERN).test(id) && phoneNumbers().parsePhoneNumberFromString(callerIdE164(id))?.isValid() === true;
}

/** An ExoPhone as Exotel's examples write it: an Indian number as 0 and its ten digits; another as given (E.164). */
export function exophone(id: string): string {
  const e164 = callerIdE164(id);
  return e164.startsWith('+91') && e164.length === 13 ? `0${e164.slice(3)}` : e164;
}
