// Driving a gateway process until it is killed, and reading back what it stored: shared by the
// crash tests (test/billing/crash.test.ts) and the crash bench (bench/crash.ts).
import assert from 'node:assert/strict';
import { call, createKey, signup } from '../helper.ts';

/** µ¢ per token (a price in cents per million tokens is exactly µ¢ per token): every cost an integer. */
export const PRICING = { input_cents_per_mtok: 100, output_cents_per_mtok: 300 };

/** A call the gateway answered: when (performance.now()) and what it said it cost (µ¢, from its usage). */
export interface Ack {
  at: number;
  cost: number;
}

export async function putModel(url: string, admin: string, upstreamUrl: string, id: string, pricing: Record<string, number> = PRICING): Promise<void> {
  const r = await call(url, 'PUT', `/admin/models/${id}`, {
    token: admin,
    body: {
      type: 'llm',
      owned_by: 'test',
      context_window: 4096,
      max_output_tokens: 256,
      pricing,
      routes: [{ provider: 'openai', base_url: `${upstreamUrl}/v1`, api_key: 'sk-up', upstream_model: 'gpt-up' }],
    },
  });
  assert.equal(r.status, 201, r.text);
}

/** A new user with `cents` topped up and an API key. */
export async function fundedAccount(url: string, admin: string, cents: number): Promise<{ token: string; key: string }> {
  const u = await signup(url);
  assert.equal((await call(url, 'POST', '/admin/topups', { token: admin, body: { user_id: u.id, amount_cents: cents } })).status, 201);
  return { token: u.token, key: (await createKey(url, u.token)).api_key };
}

export const chat = (url: string, key: string, model: string, maxTokens = 16) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'tell me about rivers' }], max_tokens: maxTokens }),
  });

/** `concurrency` clients calling `model` until the gateway stops answering; resolves to every answered call. */
export async function loadUntilGone(url: string, key: string, model: string, concurrency: number): Promise<{ acks: Ack[]; refused: number }> {
  const acks: Ack[] = [];
  let refused = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        try {
          const res = await chat(url, key, model);
          if (res.status !== 200) {
            refused++;
            await res.arrayBuffer();
            continue;
          }
          const body = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
          acks.push({
            at: performance.now(),
            cost: body.usage.prompt_tokens * PRICING.input_cents_per_mtok + body.usage.completion_tokens * PRICING.output_cents_per_mtok,
          });
        } catch {
          return; // the gateway is gone
        }
      }
    }),
  );
  return { acks, refused };
}

/** The account's usage records (every page: how many, their cost), its usage summary's totals and its wallet. */
export async function storedUsage(url: string, token: string) {
  let cost = 0;
  let count = 0;
  for (let after: string | null = null; ; ) {
    const page: { status: number; text: string; body: any } = await call(url, 'GET', `/portal/usage/records?limit=100${after ? `&after=${after}` : ''}`, {
      token,
    });
    assert.equal(page.status, 200, page.text);
    for (const r of page.body.data as { cost_microcents: number }[]) {
      cost += r.cost_microcents;
      count++;
    }
    if (!page.body.has_more) break;
    after = page.body.next_after;
  }
  const summary = (await call(url, 'GET', '/portal/usage', { token })).body.totals as { requests: number; cost_microcents: number };
  const wallet = (await call(url, 'GET', '/portal/wallet', { token })).body as {
    balance_microcents: number;
    balance_cents: number;
    available_cents: number;
    held_cents: number;
  };
  return { cost, count, summary, wallet };
}

/**
 * What a crash cost, from the clients' answers and what the restarted gateway stored: calls debited,
 * answered calls left unbilled, and how much traffic that is (unbilled calls at the answer rate, in
 * ms: answers still in flight when the process died arrive after the kill, so their own times say
 * little).
 */
export function crashAccount(acks: Ack[], debitUc: number): { perCall: number; debited: number; unbilled: number; rate: number; windowMs: number } {
  const perCall = acks[0]!.cost;
  assert.ok(
    acks.every((a) => a.cost === perCall),
    'every call costs the same',
  );
  const answered = acks.length * perCall;
  const unbilled = Math.max(0, (answered - debitUc) / perCall);
  const rate = acks.length / Math.max(1, acks.at(-1)!.at - acks[0]!.at); // calls per ms
  return { perCall, debited: debitUc / perCall, unbilled, rate: rate * 1000, windowMs: unbilled / rate };
}
