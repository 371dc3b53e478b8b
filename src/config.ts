// Configuration: defaults in config/default.json, an optional overlay file (CONFIG_FILE), and the
// environment variables the README lists. Validated once at start; a bad value stops the start with
// a message naming the field. Nothing else in the code reads process.env.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { SeedModelSchema } from './shared/model-schema.ts';
import { CalleeScriptSchema } from './config-callees.ts';

export { CalleeScriptSchema, type CalleeScript } from './config-callees.ts';

const Int = (min: number, max: number) => Type.Integer({ minimum: min, maximum: max });
export const ConfigSchema = Type.Object(
  {
    port: Int(0, 65535),
    host: Type.String({ minLength: 1 }),
    dataDir: Type.String({ minLength: 1 }),
    mongodbUrl: Type.Optional(Type.String({ pattern: '^mongodb(\\+srv)?://' })),
    adminToken: Type.Optional(Type.String({ minLength: 16 })),
    keySigningSecret: Type.Optional(Type.String({ minLength: 32 })),
    logLevel: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l))),
    instanceId: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    /** Where the built dashboard is (index.html, assets/); default dist/dashboard beside config/. */
    dashboardDir: Type.Optional(Type.String({ minLength: 1 })),
    http: Type.Object(
      {
        bodyLimitBytes: Int(1024, 1 << 20),
        inferenceBodyLimitBytes: Int(1024, 16 << 20),
        maxJsonDepth: Int(2, 1000),
        requestTimeoutMs: Int(1000, 600_000),
        headersTimeoutMs: Int(1000, 600_000),
        keepAliveTimeoutMs: Int(1000, 600_000),
        /** Load-balancer addresses (IPs, CIDRs, `loopback`, `linklocal`, `uniquelocal`) whose X-Forwarded-For is believed. */
        trustProxy: Type.Array(Type.String({ minLength: 1 }), { maxItems: 64 }),
        /** Open connections in all; past it a new one gets a 503 and is closed. */
        maxConnections: Int(1, 1_000_000),
        /** Open connections from one remote address (an IPv6 /64); trusted proxies are exempt. */
        maxConnectionsPerAddress: Int(1, 1_000_000),
        /**
         * At shutdown, how long streamed responses (SSE, raw audio) may run on; then their
         * connections are closed (a client that stopped reading never lets one end) and billed.
         */
        shutdownGraceMs: Int(0, 600_000),
        /**
         * A streamed response (SSE, raw audio) whose write waits this long for its socket to drain
         * (its client stopped reading) is cut: its upstream or engine let go, what was sent billed.
         */
        streamStallTimeoutMs: Int(100, 600_000),
      },
      { additionalProperties: false },
    ),
    metrics: Type.Object(
      {
        /**
         * Where GET /metrics is served: `host:port`, a listener of its own (not the API port); `api`,
         * the API port (needs `token`); `off`, nowhere.
         */
        listen: Type.String({ pattern: '^(api|off|(\\[[0-9A-Fa-f:.]+\\]|[^:\\s\\[\\]]+):\\d{1,5})$' }),
        /** When set, /metrics asks for `Authorization: Bearer <token>`. */
        token: Type.Optional(Type.String({ minLength: 16 })),
      },
      { additionalProperties: false },
    ),
    /** What the gateway allows its upstreams (src/providers/http.ts). */
    upstream: Type.Object(
      {
        /**
         * Silence allowed between a streamed answer's bytes (before its first too): past it the
         * stream has failed (an in-stream error to the client, billed for what it received).
         */
        streamIdleTimeoutMs: Int(100, 600_000),
      },
      { additionalProperties: false },
    ),
    store: Type.Object({ ttlSweepMs: Int(100, 3_600_000) }, { additionalProperties: false }),
    billing: Type.Object(
      {
        /** A hold not settled within this time (its process died) is returned by the sweep. */
        holdTtlSeconds: Int(10, 7 * 86_400),
        /** Settles and releases wait for their fsync before the answer (true) or only for being applied (false, the default); holds are always lazy. */
        durableWalletWrites: Type.Boolean(),
        /** A billing instance whose lease is this old is dead: its holds and usage are finished by the others (MongoDB). */
        instanceLeaseSeconds: Int(3, 3600),
        sweepIntervalMs: Int(100, 3_600_000),
        renewalIntervalMs: Int(100, 86_400_000),
        /** Usage records and rollups trail the calls by at most this (or flushMaxRecords records). */
        usageFlushIntervalMs: Int(10, 60_000),
        usageFlushMaxRecords: Int(1, 100_000),
        usageMaxBuffered: Int(1000, 100_000_000),
        plans: Type.Array(
          Type.Object(
            {
              id: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' }),
              name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
              monthly_credit_cents: Int(0, 1_000_000_000),
            },
            { additionalProperties: false },
          ),
          { maxItems: 1000 },
        ),
      },
      { additionalProperties: false },
    ),
    actors: Type.Object(
      {
        leaseMs: Int(500, 600_000),
        leaseWaitMs: Int(0, 600_000),
        idleEvictMs: Int(100, 86_400_000),
        idleLeaseGraceMs: Int(0, 600_000),
        inboxPollMs: Int(10, 600_000),
        maxSnapshotBytes: Int(1_024, 16 * 1024 * 1024),
      },
      { additionalProperties: false },
    ),
    auth: Type.Object(
      {
        sessionTtlHours: Int(1, 24 * 365),
        passwordMinLength: Int(8, 128),
        passwordMaxLength: Int(16, 4096),
        argon2: Type.Object({ memoryCost: Int(1024, 1 << 21), timeCost: Int(1, 20), parallelism: Int(1, 16) }, { additionalProperties: false }),
        loginWindowSeconds: Int(1, 86_400),
        loginMaxFailuresPerAccount: Int(1, 10_000),
        loginMaxFailuresPerAddress: Int(1, 100_000),
        signupMaxPerAddressPerHour: Int(1, 100_000),
      },
      { additionalProperties: false },
    ),
    keys: Type.Object(
      {
        maxActivePerUser: Int(1, 100_000),
        lastUsedWriteIntervalSeconds: Int(0, 86_400),
        verifiedTokenCacheSize: Int(0, 10_000_000),
      },
      { additionalProperties: false },
    ),
    orgs: Type.Object(
      {
        maxMembers: Int(1, 1_000_000),
        invitations: Type.Object(
          {
            /** An invitation not accepted within this time can no longer be (compared in queries, not by TTL). */
            ttlHours: Int(1, 90 * 24),
            /** Pending, unexpired invitations an organization may have at once. */
            maxPendingPerOrg: Int(1, 100_000),
            /** New invitations per hour and per day: each limit counts the organization and the inviter separately. */
            perHour: Int(1, 1_000_000),
            perDay: Int(1, 10_000_000),
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    webhooks: Type.Object(
      {
        /** Lifts the address rule (loopback, private, link-local... receivers): development and tests only. */
        allowPrivateNetworks: Type.Boolean(),
        /** Accept http:// receiving URLs (otherwise https only). */
        allowHttp: Type.Boolean(),
        maxPerAccount: Int(1, 1000),
        /** The whole exchange with a receiver; the spec's limit is 5 s. */
        timeoutMs: Int(100, 5000),
        /** Events one endpoint sends at once. */
        batchSize: Int(1, 10),
        maxQueuedPerEndpoint: Int(1, 10_000_000),
        deliveryLogSize: Int(1, 10_000),
        sweepIntervalMs: Int(100, 3_600_000),
        usageSpike: Type.Object(
          {
            enabled: Type.Boolean(),
            windowSeconds: Int(60, 86_400),
            baselineHours: Int(1, 168),
            multiple: Type.Number({ minimum: 1, maximum: 1000 }),
            minTokens: Int(1, 1_000_000_000_000),
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    transcription: Type.Object(
      {
        /** Finished jobs, their audio and transcripts are deleted this many days after they end. */
        retentionDays: Int(1, 3650),
        /** Active jobs one instance works on at once; more wait, queued, for room on any instance. */
        capacity: Int(1, 10_000),
        /** First poll of a provider's job after it accepted it; later polls back off to maxPollMs. */
        pollMs: Int(100, 3_600_000),
        maxPollMs: Int(100, 3_600_000),
        /** A job's hold lasts this long: a job not finished by then fails (and is not charged). */
        maxJobHours: Int(1, 720),
        /**
         * The longest recording a job takes, in minutes of decoded audio: one that declares more is
         * refused at upload (400 audio_too_long); one that decodes to more fails, free, and its
         * decoding stops there.
         */
        maxAudioMinutes: Int(1, 6000),
        /**
         * The gateway's public base URL (https://api.example.com), for providers' job callbacks;
         * empty: no callbacks, jobs are polled (Deepgram, which cannot be polled, is then not used for jobs).
         */
        publicUrl: Type.String({ maxLength: 2048 }),
        /** Where stt-local's built language models are kept by content for later builds (speech/language-models.ts); empty: none. */
        languageModelCacheDir: Type.String({ maxLength: 4096 }),
      },
      { additionalProperties: false },
    ),
    realtime: Type.Object(
      {
        /** Open realtime sockets per API key on one instance; past it the upgrade is refused 429. */
        maxSocketsPerKey: Int(1, 100_000),
        /** Open realtime sockets on one instance, all keys together; past it the upgrade is refused 503. */
        maxSockets: Int(1, 1_000_000),
        /** stt-local sessions on one instance (each holds a pocketsphinx process, ≈105 MB); past it 503. */
        maxLocalEngines: Int(0, 10_000),
        /** Largest WebSocket frame (1 s of 16 kHz linear32 is 64 KB); a larger one closes the socket (1009). */
        maxPayloadBytes: Int(1024, 16 << 20),
        /** No audio for this long ends the session. */
        idleTimeoutMs: Int(1000, 3_600_000),
        /** Ping interval; a socket that did not answer the last ping by the next one is cut. */
        pingIntervalMs: Int(1000, 600_000),
        /** Our frames a client may leave unread before it is cut. */
        maxBufferedBytes: Int(16_384, 64 << 20),
        /** Client frames read ahead of the allowed rate and held in memory; past it the socket is paused (TCP pushes back). */
        maxBacklogBytes: Int(0, 64 << 20),
        /** Audio faster than real time is taken up to this factor, after `burstSeconds` ahead. */
        rateFactor: Type.Number({ minimum: 1, maximum: 100 }),
        burstSeconds: Int(0, 600),
        /** Malformed frames a session answers with `error` frames before it is closed (1008). */
        maxBadFrames: Int(1, 1_000_000),
        /** Seconds of audio one tick's hold covers; each tick is settled and the next held. */
        tickSeconds: Int(1, 3600),
        /** A tick's hold is settled and renewed at this age even when its audio is not in. */
        tickMaxAgeMs: Int(1000, 3_600_000),
        /** Audio-received checkpoints sent to the session's actor (ms). */
        progressMs: Int(100, 60_000),
        /** The actor's checkpoint interval (ms): with progressMs, what a kill -9 can leave unbilled. */
        checkpointMs: Int(100, 60_000),
        /** An utterance is committed at this length even while speech goes on. */
        maxUtteranceSeconds: Int(1, 120),
        /** Committed utterances waiting for the recogniser; past it the session ends (model_unavailable). */
        maxPendingUtterances: Int(1, 1000),
        /** One utterance's recognition; past it the session ends with an error frame. */
        utteranceTimeoutMs: Int(1000, 600_000),
        /** How often an open socket's key is authenticated again (a revoked key ends the session). */
        reauthIntervalMs: Int(1000, 3_600_000),
        /** How long shutdown waits for open sessions to bill. */
        closeTimeoutMs: Int(100, 120_000),
        /** Finished sessions' actors are deleted after this many days. */
        retentionDays: Int(1, 3650),
      },
      { additionalProperties: false },
    ),
    intent: Type.Object(
      {
        /** An intent session forgets its context after this long without a turn. */
        sessionIdleMinutes: Int(1, 7 * 24 * 60),
        /** Pack files (relative to config/) stored at start when absent or of a higher version. */
        packs: Type.Array(Type.String({ minLength: 1 }), { maxItems: 100 }),
      },
      { additionalProperties: false },
    ),
    voice: Type.Object(
      {
        /** Calls of one account in progress at once (queued to ending); past it POST /v1/voice/call answers 429. */
        maxConcurrentCalls: Int(1, 100_000),
        /** A call the wallet cannot cover for this long is refused (402 insufficient_credit) before anything is dialled. */
        minAffordableSeconds: Int(1, 3600),
        /**
         * The gateway's public base URL (https://api.example.com) that carriers call back and open
         * media streams to; empty: the address the gateway listens on (enough for the simulator).
         */
        publicUrl: Type.String({ maxLength: 2048 }),
        /** Largest carrier media frame (a Twilio media message is ~400 bytes; Exotel's up to ~10 KB). */
        maxPayloadBytes: Int(1024, 1 << 20),
        /** An answered call whose media stream has not started (or sent nothing) for this long ends with media_timeout. */
        mediaTimeoutMs: Int(1000, 600_000),
        /** How long a call's tool request waits for the integrator's answer when the call gives no `tool_timeout_ms`. */
        toolTimeoutMs: Int(500, 15_000),
        /** A call's analysis (src/voice/analysis.ts): upstream attempts before it is `failed`, and the first backoff between them (doubling). */
        analysisAttempts: Int(1, 10),
        analysisBackoffMs: Int(10, 600_000),
        /** The actor's checkpoint interval (ms): what a kill -9 can leave unbilled of a call in progress. */
        checkpointMs: Int(100, 60_000),
        /** Finished calls (their transcripts) are deleted after this many days. */
        retentionDays: Int(1, 3650),
        /** Batches (docs/api/voice-batches.md): how often one with calls in progress ticks, one paused for credit re-checks the wallet, the longest sleep. */
        batches: Type.Object(
          { pollMs: Int(50, 60_000), creditRecheckMs: Int(100, 3_600_000), maxSleepMs: Int(1000, 3_600_000) },
          { additionalProperties: false },
        ),
        /** The simulator carrier's callees: a script per dialled number (`to`; `*`: any number), the first that matches. */
        simulator: Type.Object({ callees: Type.Array(CalleeScriptSchema, { maxItems: 1000 }) }, { additionalProperties: false }),
      },
      { additionalProperties: false },
    ),
    /** Models created at start when absent (an administrator's later changes win). */
    models: Type.Array(SeedModelSchema, { maxItems: 10_000 }),
  },
  { additionalProperties: false },
);

export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** The repository's config/ directory (one level up from src/, and from dist/ in the production bundle). */
export const CONFIG_DIR = fileURLToPath(new URL('../config/', import.meta.url));
/** The offline recogniser's background sentences (src/speech/language-models.ts). */
export const SPEECH_BACKGROUND_FILE = `${CONFIG_DIR}speech/background-en.txt`;
const DEFAULT_FILE = join(CONFIG_DIR, 'default.json');

type Json = Record<string, unknown>;

function readJson(path: string): Json {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Json;
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as Error).message}`);
  }
}

/** Keys that would reach a prototype through `out[k] = ...`: refused, not merged. */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

function merge(base: Json, over: Json, at = ''): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const path = at ? `${at}.${k}` : k;
    if (PROTOTYPE_KEYS.has(k)) throw new ConfigError(`invalid configuration: field "${path}" is not a known setting`);
    const b = Object.hasOwn(out, k) ? out[k] : undefined;
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b) ? merge(b as Json, v as Json, path) : v;
  }
  return out;
}

/** Environment variable → [config path, parser]. Parsers keep the raw string so validation names it. */
const ENV: Record<string, [string, 'int' | 'string' | 'bool']> = {
  PORT: ['port', 'int'],
  HOST: ['host', 'string'],
  DATA_DIR: ['dataDir', 'string'],
  MONGODB_URL: ['mongodbUrl', 'string'],
  ADMIN_TOKEN: ['adminToken', 'string'],
  KEY_SIGNING_SECRET: ['keySigningSecret', 'string'],
  LOG_LEVEL: ['logLevel', 'string'],
  INSTANCE_ID: ['instanceId', 'string'],
  DASHBOARD_DIR: ['dashboardDir', 'string'],
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: ['webhooks.allowPrivateNetworks', 'bool'],
  WEBHOOKS_ALLOW_HTTP: ['webhooks.allowHttp', 'bool'],
  METRICS_LISTEN: ['metrics.listen', 'string'],
  METRICS_TOKEN: ['metrics.token', 'string'],
  TRANSCRIPTION_PUBLIC_URL: ['transcription.publicUrl', 'string'],
  TRANSCRIPTION_POLL_MS: ['transcription.pollMs', 'int'],
  LANGUAGE_MODEL_CACHE_DIR: ['transcription.languageModelCacheDir', 'string'],
  PUBLIC_BASE_URL: ['voice.publicUrl', 'string'],
};

function fromEnv(env: NodeJS.ProcessEnv): Json {
  const out: Json = {};
  for (const [name, [path, kind]] of Object.entries(ENV)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    let value: unknown = raw;
    if (kind === 'int') {
      if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} (config field "${path}") must be an integer, got "${raw}"`);
      value = Number(raw);
    } else if (kind === 'bool') {
      if (raw !== 'true' && raw !== 'false') throw new ConfigError(`${name} (config field "${path}") must be true or false, got "${raw}"`);
      value = raw === 'true';
    }
    // A dotted path names a nested field (webhooks.allowPrivateNetworks).
    const parts = path.split('.');
    let at = out;
    for (const part of parts.slice(0, -1)) at = (at[part] ??= {}) as Json;
    at[parts[parts.length - 1]!] = value;
  }
  return out;
}

/** Loads and validates the configuration; throws ConfigError naming the first bad field. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Json = {}): Config {
  let raw = readJson(DEFAULT_FILE);
  if (env.CONFIG_FILE) raw = merge(raw, readJson(env.CONFIG_FILE));
  raw = merge(merge(raw, fromEnv(env)), overrides);
  if (!Value.Check(ConfigSchema, raw)) {
    const errors = [...Value.Errors(ConfigSchema, raw)];
    // The most specific error first: a leaf path beats the union/object summary lines.
    const first = errors.sort((a, b) => b.instancePath.length - a.instancePath.length)[0];
    const field = first?.instancePath.replace(/^\//, '').replaceAll('/', '.') || '(root)';
    const unknown = first?.keyword === 'boolean' || first?.keyword === 'additionalProperties';
    const why = unknown ? 'is not a known setting' : (first?.message ?? 'is invalid');
    throw new ConfigError(`invalid configuration: field "${field}" ${why}`);
  }
  const config = raw as Config;
  // Rules across fields.
  if (config.http.headersTimeoutMs > config.http.requestTimeoutMs) {
    throw new ConfigError('invalid configuration: field "http.headersTimeoutMs" must not exceed http.requestTimeoutMs');
  }
  if (config.metrics.listen === 'api' && config.metrics.token === undefined) {
    throw new ConfigError('invalid configuration: field "metrics.token" must be set to serve /metrics on the API port (metrics.listen "api")');
  }
  return config;
}
