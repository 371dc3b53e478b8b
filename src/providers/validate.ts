// Checks on what an upstream sends back. Upstream JSON is untrusted: providers copy the fields they
// know into fresh objects after these checks, never spread or assign upstream objects.
import { jsonDepthExceeds } from '../shared/json-depth.ts';
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

/** A detail count (`details[key]`) when it is a plausible part of `whole`, else undefined. */
function partOf(details: unknown, key: string, whole: number): number | undefined {
  if (!isObject(details) || details[key] === undefined) return undefined;
  const n = tokenCount(details[key]);
  return n !== null && n <= whole ? n : undefined;
}

/**
 * OpenAI's usage object: the counts, with the hidden reasoning tokens
 * (`completion_tokens_details.reasoning_tokens`) and the prompt tokens read from its cache
 * (`prompt_tokens_details.cached_tokens`) when it reports a plausible number of them (at most the
 * count they are part of).
 */
export function openaiUsageOf(usage: Json): TokenUsage | null {
  const out = usageOf(usage.prompt_tokens, usage.completion_tokens);
  if (!out) return null;
  const reasoning = partOf(usage.completion_tokens_details, 'reasoning_tokens', out.completion_tokens);
  if (reasoning !== undefined) out.reasoning_tokens = reasoning;
  const cached = partOf(usage.prompt_tokens_details, 'cached_tokens', out.prompt_tokens);
  if (cached !== undefined) out.cached_tokens = cached;
  return out;
}

/** Nesting allowed in upstream JSON; real answers nest 4 or 5 deep. */
export const MAX_JSON_DEPTH = 64;

/**
 * Parses upstream JSON after a linear scan for its nesting depth: V8 takes seconds over a few MB of
 * `[[[[…`, time a hostile upstream should not get to spend on our event loop (the scan:
 * src/shared/json-depth.ts). Throws on either.
 */
export function parseJson(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  if (jsonDepthExceeds(text, maxDepth)) throw new SyntaxError(`JSON nested deeper than ${maxDepth}`);
  return JSON.parse(text) as unknown;
}

export function protocolError(routeId: string, what: string): UpstreamError {
  return new UpstreamError('protocol', `route ${routeId}: malformed upstream answer (${what})`, true);
}
