// Shared pieces of the provider tests: a route pointing at a fake, draining a stream, waiting for
// a condition, and a port nothing listens on.
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { UpstreamError, type ChatChunk, type ResolvedRoute } from '../../src/providers/types.ts';
import type { FakeServer } from '../fakes/fake-server.ts';

export function routeTo(fake: FakeServer | string, overrides: Partial<ResolvedRoute> = {}): ResolvedRoute {
  const base = typeof fake === 'string' ? fake : fake.url;
  const provider = overrides.provider ?? 'openai';
  return {
    id: 'm#0',
    provider,
    baseUrl: provider === 'openai' ? `${base}/v1` : base,
    apiKey: provider === 'openai' ? 'sk-up-0123456789' : 'sk-ant-fake',
    upstreamModel: 'up-model',
    timeoutMs: 2000,
    ...overrides,
  };
}

export const USER = (content: string) => ({ role: 'user' as const, content });

export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** Drains a stream, returning what arrived before it ended and the error that ended it, if any. */
export async function drain(it: AsyncIterable<ChatChunk>): Promise<{ chunks: ChatChunk[]; error: unknown }> {
  const chunks: ChatChunk[] = [];
  try {
    for await (const c of it) chunks.push(c);
    return { chunks, error: null };
  } catch (error) {
    return { chunks, error };
  }
}

export function text(chunks: (ChatChunk | null)[]): string {
  return chunks.map((c) => c?.choices.map((x) => x.delta.content ?? '').join('') ?? '').join('');
}

export async function until(pred: () => boolean, timeoutMs = 2000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(5);
  }
}

/** A loopback port that refuses connections (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export const never = new AbortController().signal;

/** The UpstreamError a call fails with (the test fails if it succeeds or throws anything else). */
export async function upstreamFailure(p: Promise<unknown>): Promise<UpstreamError> {
  const err = await p.then(
    () => assert.fail('expected a failure'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof UpstreamError, String(err));
  return err;
}
