// Test helper: a real gateway on the embedded store in a fresh temp dir, listening on a loopback
// port. Argon2 is made cheap (tests hash many passwords) and the recogniser's language models are
// built once per run (languageModelCache); everything else is the default config.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig, type Config } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import type { Gateway, StartOptions } from '../src/server.ts';
import type { AccountEvent, EventSink } from '../src/shared/events.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export interface TestGateway extends Gateway {
  dir: string;
  config: Config;
  events: AccountEvent[];
  /** Stops the gateway and removes its data dir. */
  destroy(): Promise<void>;
}

/**
 * The folder every test gateway keeps the offline recogniser's language models in
 * (`transcription.languageModelCacheDir`): a pack's models are built by the first gateway of the run
 * that needs them (irstlm and festival, ~2 s of CPU) and copied by the others. Under
 * scripts/run-tests.mjs, os.tmpdir() is the run's folder, removed at its end.
 */
export const languageModelCache = () => join(tmpdir(), 'gateway-tests-language-models');

export function testConfig(dir: string, overrides: Record<string, unknown> = {}): Config {
  return loadConfig(
    {},
    {
      port: 0,
      dataDir: dir,
      logLevel: 'silent',
      adminToken: ADMIN_TOKEN,
      auth: { argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 }, signupMaxPerAddressPerHour: 100_000 },
      metrics: { listen: '127.0.0.1:0' }, // its own listener, as by default, on a free port: Gateway.metricsUrl
      transcription: { languageModelCacheDir: languageModelCache() },
      ...overrides,
    },
  );
}

export async function startTestGateway(overrides: Record<string, unknown> = {}, opts: StartOptions & { dir?: string } = {}): Promise<TestGateway> {
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'gw-test-')));
  const config = testConfig(dir, overrides);
  const events: AccountEvent[] = [];
  const sink: EventSink = { emit: async (e) => void events.push(e) };
  // Imported here, not with this module: the files that run the gateway as a child process and only
  // call it (test/gateway-process.ts) do not load the whole gateway themselves.
  const { startGateway } = await import('../src/server.ts');
  const gw = await startGateway(config, { logger: createLogger('silent'), events: sink, ...opts });
  return {
    ...gw,
    dir,
    config,
    events,
    async destroy() {
      await gw.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface Res<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A small fetch wrapper: JSON in, parsed JSON (or text) out. */
export async function call<T = any>(
  base: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; raw?: string | Uint8Array; headers?: Record<string, string> } = {},
): Promise<Res<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | Uint8Array | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

let seq = 0;
/** Signs up a fresh user and returns its id, e-mail and session token. */
export async function signup(base: string, email = `user${Date.now()}_${seq++}@example.com`) {
  const res = await call(base, 'POST', '/portal/auth/signup', { body: { email, password: 'correct horse battery' } });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${res.text}`);
  return { id: res.body.user.id as number, email, token: res.body.session_token as string };
}

export async function createKey(base: string, session: string, body: Record<string, unknown> = { name: 'test' }) {
  const res = await call(base, 'POST', '/portal/keys', { token: session, body });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
  return res.body as { id: number; api_key: string; prefix: string; scopes: string[] };
}

/** A fresh account with a key and `cents` of credit (topped up by the administrator): its session token and key. */
export async function fundedAccount(base: string, cents = 100): Promise<{ id: number; token: string; key: string }> {
  const s = await signup(base);
  const key = (await createKey(base, s.token)).api_key;
  const topup = await call(base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: cents } });
  if (topup.status !== 201) throw new Error(`top-up failed: ${topup.status} ${topup.text}`);
  return { id: s.id, token: s.token, key };
}

/** Invites `invitee` into the inviter's organization and accepts as the invitee; returns the organization. */
export async function joinOrg(base: string, inviterToken: string, invitee: { email: string; token: string }, role: 'admin' | 'member' = 'member') {
  const invited = await call(base, 'POST', '/portal/org/members', { token: inviterToken, body: { email: invitee.email, role } });
  if (invited.status !== 202) throw new Error(`invitation failed: ${invited.status} ${invited.text}`);
  const accepted = await call(base, 'POST', `/portal/invitations/${invited.body.invitation.id}/accept`, { token: invitee.token });
  if (accepted.status !== 200) throw new Error(`acceptance failed: ${accepted.status} ${accepted.text}`);
  return accepted.body as { id: number; name: string; role: string };
}

/**
 * Every page of a paginated list (`{data, has_more, next_after}`), following next_after from `path`
 * (which carries its query already); checks each page's shape. The items in order, and the requests.
 */
export async function walkPages<T = any>(base: string, path: string, token: string): Promise<{ items: T[]; requests: number }> {
  const items: T[] = [];
  let after: string | null = null;
  let requests = 0;
  do {
    const res: Res = await call(base, 'GET', after === null ? path : `${path}${path.includes('?') ? '&' : '?'}after=${encodeURIComponent(after)}`, { token });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
    requests++;
    items.push(...res.body.data);
    if ((res.body.next_after === null) !== !res.body.has_more) throw new Error(`${path}: next_after ${res.body.next_after} with has_more ${res.body.has_more}`);
    after = res.body.next_after;
  } while (after !== null);
  return { items, requests };
}

/**
 * Per-key RPM windows are the clock's minutes (src/billing/limits.ts): a test whose calls must all
 * fall in one waits here first when the current minute has less than `needMs` left.
 */
export async function inOneRateWindow(needMs = 10_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await sleep(left + 50);
}
