// Configuration: defaults, environment overrides, validation naming the field, the generated secret.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { ConfigError, loadConfig } from '../src/config.ts';
import { resolveKeySecret, SECRET_FILE } from '../src/shared/secrets.ts';
import { gatewayArgs } from './gateway-process.ts';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.dataDir, './data');
    assert.equal(c.logLevel, 'info');
    assert.equal(c.mongodbUrl, undefined);
    assert.equal(c.adminToken, undefined);
  });

  it('reads the environment', () => {
    const c = loadConfig({ PORT: '9090', HOST: '0.0.0.0', DATA_DIR: '/tmp/x', LOG_LEVEL: 'debug', ADMIN_TOKEN: 'a'.repeat(20), MONGODB_URL: 'mongodb://h/db' });
    assert.deepEqual(
      [c.port, c.host, c.dataDir, c.logLevel, c.adminToken, c.mongodbUrl],
      [9090, '0.0.0.0', '/tmp/x', 'debug', 'a'.repeat(20), 'mongodb://h/db'],
    );
  });

  it('names the bad field', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ PORT: 'eighty' }, /PORT.*"port"/],
      [{ PORT: '70000' }, /"port"/],
      [{ LOG_LEVEL: 'loud' }, /"logLevel"/],
      [{ MONGODB_URL: 'postgres://x' }, /"mongodbUrl"/],
      [{ ADMIN_TOKEN: 'short' }, /"adminToken"/],
      [{ KEY_SIGNING_SECRET: 'short' }, /"keySigningSecret"/],
    ];
    for (const [env, re] of cases)
      assert.throws(
        () => loadConfig(env),
        (e: unknown) => e instanceof ConfigError && re.test(e.message),
        JSON.stringify(env),
      );
  });

  it('caps connections and keeps /metrics off the API port by default; METRICS_LISTEN and METRICS_TOKEN override', () => {
    const c = loadConfig({});
    assert.deepEqual([c.http.maxConnections, c.http.maxConnectionsPerAddress], [10_000, 256]);
    assert.deepEqual(c.metrics, { listen: '127.0.0.1:9464' });
    const e = loadConfig({ METRICS_LISTEN: '[::1]:9100', METRICS_TOKEN: 't'.repeat(16) });
    assert.deepEqual(e.metrics, { listen: '[::1]:9100', token: 't'.repeat(16) });
    assert.throws(() => loadConfig({ METRICS_LISTEN: '9464' }), /field "metrics.listen"/);
  });

  it('refuses settings that contradict each other', () => {
    assert.throws(() => loadConfig({ METRICS_LISTEN: 'api' }), /field "metrics.token" must be set/);
    assert.equal(loadConfig({ METRICS_LISTEN: 'api', METRICS_TOKEN: 't'.repeat(16) }).metrics.listen, 'api');
    assert.throws(() => loadConfig({}, { http: { headersTimeoutMs: 20_000, requestTimeoutMs: 10_000 } }), /field "http.headersTimeoutMs" must not exceed/);
  });

  it('overlays CONFIG_FILE and refuses unknown fields in it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-cfg-'));
    try {
      const f = join(dir, 'c.json');
      await writeFile(f, JSON.stringify({ http: { maxJsonDepth: 10 } }));
      assert.equal(loadConfig({ CONFIG_FILE: f }).http.maxJsonDepth, 10);
      await writeFile(f, JSON.stringify({ http: { maxJsonDeep: 10 } }));
      assert.throws(() => loadConfig({ CONFIG_FILE: f }), /field "http.maxJsonDeep" is not a known setting/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses prototype keys in CONFIG_FILE, naming them, instead of merging them into a prototype', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-cfg-'));
    try {
      const f = join(dir, 'c.json');
      // Written as text: JSON.parse makes "__proto__" an own key, as a hand-written file would.
      await writeFile(f, '{"__proto__": {"adminToken": "injected-token-0123456789"}}');
      assert.throws(
        () => loadConfig({ CONFIG_FILE: f }),
        (e: unknown) => e instanceof ConfigError && /"__proto__"/.test(e.message),
      );
      await writeFile(f, '{"http": {"constructor": {"prototype": {"x": 1}}}}');
      assert.throws(
        () => loadConfig({ CONFIG_FILE: f }),
        (e: unknown) => e instanceof ConfigError && /"http.constructor"/.test(e.message),
      );
      assert.throws(
        () => loadConfig({}, JSON.parse('{"webhooks": {"prototype": 1}}')),
        (e: unknown) => e instanceof ConfigError && /"webhooks.prototype"/.test(e.message),
      );
      assert.equal(({} as Record<string, unknown>).adminToken, undefined);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('generates the key-signing secret once, mode 0600, and requires it with MongoDB', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-secret-'));
    try {
      const c = loadConfig({ DATA_DIR: join(dir, 'data') });
      const s1 = resolveKeySecret(c);
      assert.ok(s1.length >= 32);
      const path = join(dir, 'data', SECRET_FILE);
      assert.equal((await stat(path)).mode & 0o777, 0o600);
      assert.equal(resolveKeySecret(c), s1, 'kept across restarts');
      assert.equal((await readFile(path, 'utf8')).trim(), s1);
      assert.throws(() => resolveKeySecret(loadConfig({ MONGODB_URL: 'mongodb://h/db' })), /KEY_SIGNING_SECRET/);
      assert.equal(resolveKeySecret(loadConfig({ KEY_SIGNING_SECRET: 'k'.repeat(32) })), 'k'.repeat(32));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a bad value stops the start with a message naming the field (exit 2)', () => {
    const r = spawnSync(process.execPath, gatewayArgs(), { env: { ...process.env, PORT: 'abc' }, encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /PORT \(config field "port"\) must be an integer/);
  });
});
