// The embeddings capability's port: OpenAI's embeddings request and answer.
import type { CancelSignal } from '../cancel.ts';
import type { ResolvedRoute } from '../upstream.ts';

/**
 * OpenAI's embeddings input: a text, texts, one text as token ids, or several as token ids (ids of
 * the upstream model's tokenizer, which only the client can know; passed through untouched).
 */
export type EmbeddingsInput = string | string[] | number[] | number[][];

/** How many embeddings an input asks for: one per text or per token-id list. */
export function embeddingsInputItems(input: EmbeddingsInput): (string | number[])[] {
  if (typeof input === 'string') return [input];
  if (input.length > 0 && typeof input[0] === 'number') return [input as number[]];
  return input as (string | number[])[];
}

export interface EmbeddingsRequest {
  input: EmbeddingsInput;
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  /** The client's end-user id, made opaque by the gateway (as ChatRequest's). */
  user?: string;
}

export interface EmbeddingsResult {
  data: { index: number; embedding: number[] | string }[];
  usage: { prompt_tokens: number } | null;
}

export interface EmbeddingsCapability {
  embed(route: ResolvedRoute, req: EmbeddingsRequest, signal: CancelSignal): Promise<EmbeddingsResult>;
}
