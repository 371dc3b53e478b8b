// A toy shop pack shared by the local-model tests (ensemble, ensemble.reject): four intents of
// eight examples each, and a builder for the pack around them.
import { validatePack } from '../../src/intent/pack.ts';

export const taught: Record<string, string[]> = {
  DELIVERY: [
    'when will my mattress be delivered',
    'delivery time for my order',
    'how many days for delivery',
    'do you deliver to my pincode',
    'is delivery free',
    'track my delivery',
    'my order has not arrived yet',
    'can you deliver this week',
  ],
  PRICE: [
    'what is the price of the mattress',
    'how much does the queen size cost',
    'price of king size mattress',
    'is there any discount',
    'what does the ortho mattress cost',
    'any offers on mattresses',
    'cost of single bed mattress',
    'tell me the price',
  ],
  RETURN: [
    'i want to return my mattress',
    'how do i return the product',
    'what is your return policy',
    'can i get a refund',
    'return and refund process',
    'the mattress is uncomfortable i want to send it back',
    'trial period for returns',
    'refund my money',
  ],
  WARRANTY: [
    'what is the warranty on the mattress',
    'how many years of warranty',
    'is there a warranty',
    'warranty claim for my mattress',
    'the mattress sagged is it covered by warranty',
    'warranty period details',
    'does the warranty cover stains',
    'how to claim warranty',
  ],
};

const D = { action: 'INFORM', next_state: 'DONE', response_id: 'R' };

/** The toy shop as a validated pack; `extra` adds or replaces top-level fields (thresholds, out_of_scope, ensemble). */
export function toyShopPack(extra: Record<string, unknown> = {}) {
  return validatePack({
    id: 'toy-shop',
    version: 1,
    languages: ['en-IN'],
    out_of_scope: { keywords: [] },
    fallback: { unknown: D, ambiguous: D, out_of_scope: D },
    intents: Object.entries(taught).map(([label, texts]) => ({ id: `SHOP.${label}`, examples: { 'en-IN': texts }, confirm: false, decisions: { initial: D } })),
    responses: { R: { 'en-IN': { text: 'r', voice: 'r' } } },
    ...extra,
  });
}
