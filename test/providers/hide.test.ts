// An upstream's explanation reaches the client without the names that would give its route away.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hideUpstream } from '../../src/providers/hide.ts';
import type { ResolvedRoute } from '../../src/providers/types.ts';

const route = (over: Partial<ResolvedRoute>): ResolvedRoute => ({
  id: 'fast-chat#1',
  provider: 'openai',
  baseUrl: 'https://api.groq.com/openai/v1',
  apiKey: 'k',
  upstreamModel: 'meta-llama/llama-3.1-8b-instant',
  timeoutMs: 1000,
  ...over,
});

describe('hideUpstream', () => {
  it("replaces the upstream's model id (and its last segment) with the virtual name, and the provider, host and domain with 'upstream'", () => {
    const said = hideUpstream(
      'The model `meta-llama/llama-3.1-8b-instant` (llama-3.1-8b-instant) does not support n > 1 on Groq; see api.groq.com or ask OpenAI.',
      route({}),
    );
    assert.equal(said, 'The model `fast-chat` (fast-chat) does not support n > 1 on upstream; see upstream or ask upstream.');
  });

  it('replaces whole names only, case-insensitively, longest first', () => {
    const r = route({ upstreamModel: 'gpt-4o', baseUrl: 'http://10.0.0.7:8000/v1' });
    assert.equal(
      hideUpstream('GPT-4o refuses; gpt-4omega stays; openai-compatible says no', r),
      'fast-chat refuses; gpt-4omega stays; upstream-compatible says no',
    );
    assert.equal(hideUpstream('prompt is too long', route({ provider: 'anthropic', upstreamModel: 'claude-sonnet-4-5' })), 'prompt is too long');
  });
});
