// The HS256 secret that signs API keys. Given by KEY_SIGNING_SECRET; in embedded mode, when not
// given, generated once and kept in DATA_DIR with mode 0600 so keys stay valid across restarts.
// With MongoDB it is required: several instances must share it, and none may invent its own.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { ConfigError } from '../config.ts';

export const SECRET_FILE = 'key-signing-secret';

export function resolveKeySecret(config: Config): string {
  if (config.keySigningSecret) return config.keySigningSecret;
  if (config.mongodbUrl) {
    throw new ConfigError(
      'KEY_SIGNING_SECRET (config field "keySigningSecret") is required with MONGODB_URL: every instance must sign keys with the same secret.',
    );
  }
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const path = join(config.dataDir, SECRET_FILE);
  try {
    const existing = readFileSync(path, 'utf8').trim();
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
    if (existing.length >= 32) return existing;
    throw new ConfigError(`${path} holds a secret shorter than 32 characters; fix or remove it.`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const secret = randomBytes(48).toString('base64url');
  // 'wx': never overwrite a secret another process wrote in the meantime.
  try {
    writeFileSync(path, secret + '\n', { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readFileSync(path, 'utf8').trim();
    throw err;
  }
}
