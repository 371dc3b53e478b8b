// Every price the gateway computes: pure functions of a model's pricing and what a call used, in
// micro-cents (µ¢, 1 cent = 10^6 µ¢). Prices are exact: a fraction of a µ¢ is kept, and passed
// unrounded to the Meter's settle, which charges whole µ¢ rounded up and carries the excess back to
// the wallet (billing/money.ts), so no rounding error accumulates over calls. An estimate (what a
// hold reserves) rounds up where its caller says so; billing rounds a hold up to whole µ¢ anyway.
//
// A price in cents per million tokens is exactly µ¢ per token; per minute, per 1,000 characters
// and per call scale up. Each unit has its own function taking plain numbers, so the chat path
// prices a call without allocating; `priceMicrocents` prices any mix of units.
import type { Pricing } from '../models/types.ts';
import { MICROCENTS_PER_CENT } from './money.ts';

/**
 * Tokens. `cachedTokens` (of the prompt, read from the upstream's cache) cost the cached-input
 * price where the model has one; an estimate counts none, so it is the upper bound (the catalog
 * keeps the cached price at most the input price).
 */
export function priceOfTokens(pricing: Pricing, promptTokens: number, completionTokens: number, cachedTokens = 0): number {
  const input = pricing.input_cents_per_mtok ?? 0;
  return (
    (promptTokens - cachedTokens) * input +
    cachedTokens * (pricing.cached_input_cents_per_mtok ?? input) +
    completionTokens * (pricing.output_cents_per_mtok ?? 0)
  );
}

/** Seconds of audio, at `cents_per_minute`. */
export function priceOfSeconds(pricing: Pricing, seconds: number): number {
  return (seconds * (pricing.cents_per_minute ?? 0) * MICROCENTS_PER_CENT) / 60;
}

/** Characters (of speech), at `cents_per_1k_chars`. */
export function priceOfCharacters(pricing: Pricing, characters: number): number {
  return (characters * (pricing.cents_per_1k_chars ?? 0) * MICROCENTS_PER_CENT) / 1000;
}

/** Calls, at `cents_per_call`. */
export function priceOfCalls(pricing: Pricing, calls: number): number {
  return calls * (pricing.cents_per_call ?? 0) * MICROCENTS_PER_CENT;
}

/** What a call used, in the units a model's pricing names. */
export interface Metered {
  promptTokens?: number;
  completionTokens?: number;
  seconds?: number;
  characters?: number;
  calls?: number;
}

/** The price of a mix of units: the sum of each unit's price. */
export function priceMicrocents(pricing: Pricing, used: Metered): number {
  return (
    priceOfTokens(pricing, used.promptTokens ?? 0, used.completionTokens ?? 0) +
    priceOfSeconds(pricing, used.seconds ?? 0) +
    priceOfCharacters(pricing, used.characters ?? 0) +
    priceOfCalls(pricing, used.calls ?? 0)
  );
}
