// A gateway process on a fresh data dir for the kill -9 tests (test/voice/*-crash.test.ts): `config`
// written as its CONFIG_FILE, launched with its INSTANCE_ID (a restart on the same data dir and id
// finds its orphaned calls), and an account with 100 cents and an API key.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, type Launched } from '../gateway-process.ts';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';

export interface CrashGateway {
  dir: string;
  data: string;
  env: NodeJS.ProcessEnv;
  gw: Launched;
  user: { id: number; token: string };
  key: string;
  /** The same data dir and instance, started again. */
  relaunch(): Promise<Launched>;
}

export async function crashGateway(prefix: string, instanceId: string, config: unknown): Promise<CrashGateway> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await writeFile(join(dir, 'config.json'), JSON.stringify(config));
  const env = { ADMIN_TOKEN, INSTANCE_ID: instanceId, CONFIG_FILE: join(dir, 'config.json') };
  const data = join(dir, 'data');
  const gw = await launch(data, { runCode: true, env });
  const user = await signup(gw.url);
  const key = (await createKey(gw.url, user.token)).api_key;
  await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: user.id, amount_cents: 100 } });
  return { dir, data, env, gw, user, key, relaunch: () => launch(data, { runCode: true, env }) };
}
