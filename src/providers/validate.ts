// Checks on what an upstream sends back. Upstream JSON is untrusted: providers copy the fields they
// know into fresh objects after these checks, never spread or assign upstream objects.
import { UpstreamError, type TokenUsage } from './types.ts';

export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** No single request is near a billion tokens; a larger count is an upstream bug, not usage. */
const MAX_TOKENS = 1_000_000_000;

/** A token count the caller may bill: a non-negative safe integer, else null. */
export function tokenCount(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= MAX_TOKENS ? v : null;
}

/** Both counts valid, or null: absurd usage (negative, fractional, NaN, huge) counts as none. */
export function usageOf(prompt: unknown, completion: unknown): TokenUsage | null {
  const p = tokenCount(prompt);
  const c = tokenCount(completion);
  return p === null || c === null ? null : { prompt_tokens: p, completion_tokens: c };
}

export function protocolError(routeId: string, what: string): UpstreamError {
  return new UpstreamError('protocol', `route ${routeId}: malformed upstream answer (${what})`, true);
}
