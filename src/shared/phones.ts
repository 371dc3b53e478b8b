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
