// API keys: `sk-live-` + an HS256 JWT (jose) with sub (user id), jti, iat and exp when the key
// expires. Only the claims and a SHA-256 of the token are stored: HS256 is deterministic, so the
// full key is re-signed from the stored claims whenever the dashboard asks for it again.
//
// Validation on every /v1 request: signature with the algorithm pinned to HS256 (verified tokens are
// cached in a bounded LRU to skip the HMAC), then one read of the key record, which is what makes
// revocation effective on the very next request on every instance: by its jti (an index lookup) the
// first time, then by its _id, which the cache remembers (a point read, half the cost; the record's
// jti must still match). Expiry and scope are checked against that record.
import { randomBytes, timingSafeEqual, webcrypto } from 'node:crypto';
import { compactVerify, SignJWT } from 'jose';
import { LRUCache } from 'lru-cache';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { isDuplicateKeyError, type Filter, type Store } from '../store/port.ts';
import { newestFirst, pageOf, type Page, type PageQuery } from '../shared/pages.ts';
import { sha256 } from '../shared/hash.ts';
import { iso, nextId, type Clock } from '../shared/common.ts';
import type { EventSink } from '../shared/events.ts';

export const KEY_PREFIX = 'sk-live-';
export const SCOPES = ['*', 'chat', 'audio', 'intent', 'voice', 'embeddings', 'models'] as const;
export type Scope = (typeof SCOPES)[number];

export interface KeyDoc {
  _id: number;
  jti: string;
  user_id: number;
  name: string;
  prefix: string;
  scopes: Scope[];
  token_hash: string;
  iat: number;
  exp: number | null;
  expires_at: Date | null;
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
  expired_event_at: Date | null;
  /** Limits the key's owner set on it (portal); null is no limit. */
  user_rpm: number | null;
  user_tpd: number | null;
  /** Cents per UTC day and per UTC month (absent on keys written before they existed: no limit). */
  user_cpd?: number | null;
  user_cpm?: number | null;
  /** Limits an administrator set on it; the effective limit is the lower of the two. */
  admin_rpm: number | null;
  admin_tpd: number | null;
  admin_cpd?: number | null;
  admin_cpm?: number | null;
  [k: string]: unknown;
}

export type KeyStatus = 'active' | 'expired' | 'revoked';

/** Keys a search tests per request at most (a few ms each thousand), and in its first chunk. */
const SEARCH_BUDGET = 10_000;
const SEARCH_FIRST_CHUNK = 100;

/** A key as its owner sees it, with its effective limits (rpm, tpd, cpd, cpm). */
export interface PublicKey extends Limits {
  id: number;
  name: string;
  prefix: string;
  scopes: Scope[];
  expires_at: string | null;
  created_at: string;
  last_used_at: string | null;
  status: KeyStatus;
}

/** Who is calling /v1, as established by the key, with its effective limits. */
export interface ApiKeyPrincipal extends Limits {
  keyId: number;
  jti: string;
  prefix: string;
  userId: number;
  scopes: readonly Scope[];
}

/** The key prefix usage records carry for calls made from the dashboard (no key: see dashboardPrincipal). */
export const DASHBOARD_KEY_PREFIX = 'dashboard';

/**
 * Who is calling when a signed-in person tries a model from the dashboard (uploads a recording,
 * hears a voice): no API key, so key id 0, no per-key limits and the `audio` scope; billed to the
 * account as its keys' calls are (the Meter finds the payer from the user), and recorded in usage
 * under the prefix `dashboard`.
 */
export function dashboardPrincipal(userId: number): ApiKeyPrincipal {
  return { keyId: 0, jti: DASHBOARD_KEY_PREFIX, prefix: DASHBOARD_KEY_PREFIX, userId, scopes: ['audio'], rpm: null, tpd: null, cpd: null, cpm: null };
}

const minLimit = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.min(a, b));

/**
 * The per-key limits: requests per minute, tokens per UTC day, cents per UTC day and per UTC
 * calendar month. Each is set by the owner (`user_<name>`) and an administrator (`admin_<name>`).
 */
export const LIMITS = ['rpm', 'tpd', 'cpd', 'cpm'] as const;
export type LimitName = (typeof LIMITS)[number];
type Limits = Record<LimitName, number | null>;

/** Each limit with its two stored fields, named once (effectiveLimits runs on every /v1 call). */
const LIMIT_FIELDS = LIMITS.map((name) => [name, `user_${name}`, `admin_${name}`] as const);

/** The key's effective limits: the lower of the owner's and the administrator's (absent: none). */
function effectiveLimits(k: KeyDoc): Limits {
  const out = {} as Limits;
  for (const [name, user, admin] of LIMIT_FIELDS)
    out[name] = minLimit((k[user] as number | null | undefined) ?? null, (k[admin] as number | null | undefined) ?? null);
  return out;
}

/** The `$set` of a limits patch, for the owner's (`user_`) or the administrator's (`admin_`) fields. */
function limitsSet(patch: Partial<Limits>, side: 'user' | 'admin'): Record<string, number | null> {
  const set: Record<string, number | null> = {};
  for (const name of LIMITS) if (patch[name] !== undefined) set[`${side}_${name}`] = patch[name];
  return set;
}

/** A token whose signature checked out: its claims and its hash (compared with the stored one). */
interface VerifiedToken {
  jti: string;
  sub: number;
  hash: string;
  /** The key record's _id, once a lookup by jti found it. */
  keyId?: number;
}

export class KeyService {
  private readonly keys;
  /** Imported once as a WebCrypto key: jose would otherwise re-import the raw secret on every call. */
  private readonly secret: Promise<webcrypto.CryptoKey>;
  /** token → jti, subject and SHA-256 of a token whose signature was verified. Bounded. */
  private readonly verified: LRUCache<string, VerifiedToken> | null;

  constructor(
    private readonly store: Store,
    secret: string,
    private readonly config: Config['keys'],
    private readonly events: EventSink,
    private readonly now: Clock,
  ) {
    this.keys = store.collection<KeyDoc>('api_keys');
    this.secret = webcrypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
    this.verified = config.verifiedTokenCacheSize > 0 ? new LRUCache({ max: config.verifiedTokenCacheSize }) : null;
  }

  async init(): Promise<void> {
    await this.keys.createIndex({ keys: { jti: 1 }, unique: true });
    await this.keys.createIndex({ keys: { prefix: 1 }, unique: true });
    // The portal's pages: all of a user's keys, and their unrevoked ones (also the active-key count),
    // newest (largest id) first. (The former (user_id, created_at) index is no longer read.)
    await this.keys.createIndex({ keys: { user_id: 1, _id: -1 } });
    await this.keys.createIndex({ keys: { user_id: 1, revoked_at: 1, _id: -1 } });
  }

  status(k: KeyDoc): KeyStatus {
    if (k.revoked_at) return 'revoked';
    if (k.expires_at && k.expires_at.getTime() <= this.now()) return 'expired';
    return 'active';
  }

  view(k: KeyDoc): PublicKey {
    return {
      id: k._id,
      name: k.name,
      prefix: k.prefix,
      scopes: k.scopes,
      expires_at: iso(k.expires_at),
      created_at: k.created_at.toISOString(),
      last_used_at: iso(k.last_used_at),
      status: this.status(k),
      ...effectiveLimits(k),
    };
  }

  /** Signs the stored claims; the same claims always give the same token. */
  private async sign(k: Pick<KeyDoc, 'user_id' | 'jti' | 'iat' | 'exp'>): Promise<string> {
    const claims: Record<string, string | number> = { sub: String(k.user_id), jti: k.jti, iat: k.iat };
    if (k.exp !== null) claims.exp = k.exp;
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(await this.secret)
      .then((jwt) => KEY_PREFIX + jwt);
  }

  async create(userId: number, input: { name: string; expires_at?: string; scopes?: string[] } & Partial<Limits>): Promise<PublicKey & { api_key: string }> {
    const scopes = normalizeScopes(input.scopes);
    let expiresAt: Date | null = null;
    if (input.expires_at !== undefined) {
      expiresAt = parseIsoUtc(input.expires_at, 'expires_at');
      if (expiresAt.getTime() <= this.now()) throw new ApiError('invalid_request', 'expires_at must be in the future.', { param: 'expires_at' });
    }
    const active = await this.keys.countDocuments({ user_id: userId, revoked_at: null });
    if (active >= this.config.maxActivePerUser) {
      throw new ApiError('key_limit_reached', `You have ${active} unrevoked keys, the limit; revoke one first.`);
    }
    const nowMs = this.now();
    for (let attempt = 0; ; attempt++) {
      const jti = randomBytes(16).toString('hex');
      const doc: KeyDoc = {
        _id: await nextId(this.store, 'api_keys'),
        jti,
        user_id: userId,
        name: input.name,
        prefix: KEY_PREFIX + jti.slice(0, 12),
        scopes,
        token_hash: '',
        iat: Math.floor(nowMs / 1000),
        // A JWT exp is whole seconds; round up so the token never dies before expires_at.
        exp: expiresAt ? Math.ceil(expiresAt.getTime() / 1000) : null,
        expires_at: expiresAt,
        created_at: new Date(nowMs),
        revoked_at: null,
        last_used_at: null,
        expired_event_at: null,
        user_rpm: null,
        user_tpd: null,
        user_cpd: null,
        user_cpm: null,
        admin_rpm: null,
        admin_tpd: null,
        admin_cpd: null,
        admin_cpm: null,
        // The owner's own limits, when given at creation (the dashboard's create form).
        ...limitsSet(input, 'user'),
      };
      const token = await this.sign(doc);
      doc.token_hash = sha256(token);
      try {
        await this.keys.insertOne(doc);
        return { ...this.view(doc), api_key: token };
      } catch (err) {
        // A 48-bit prefix collision is astronomically rare; draw a new jti rather than fail.
        if (isDuplicateKeyError(err) && attempt < 3) continue;
        throw err;
      }
    }
  }

  /**
   * A page of the user's keys, newest first, walking the (user_id, _id) index from `after` (or
   * (user_id, revoked_at, _id) for unrevoked keys), so a deep page costs what the first does.
   * `status` keeps one status. `search` matches part of the name or the prefix, ignoring case, over
   * all the user's keys, not the page: the walk tests keys in chunks and stops when the page is full
   * or after SEARCH_BUDGET keys, so one request never holds the gateway for long; a page cut short
   * has fewer keys than `limit` (even none) with has_more true and next_after where the walk stopped.
   */
  async page(userId: number, q: PageQuery<number> & { search?: string; status?: KeyStatus }): Promise<Page<PublicKey>> {
    const filter = this.statusFilter(userId, q.status);
    if (q.search === undefined) return newestFirst(this.keys, filter, q, (k) => this.view(k));
    const term = q.search.toLowerCase();
    const found: KeyDoc[] = [];
    let after = q.after;
    let examined = 0;
    let chunk = SEARCH_FIRST_CHUNK;
    while (examined < SEARCH_BUDGET) {
      const rows = await this.keys.find(after === undefined ? filter : { ...filter, _id: { $lt: after } }, { sort: { _id: -1 }, limit: chunk });
      for (const k of rows) {
        examined++;
        after = k._id;
        if (k.name.toLowerCase().includes(term) || k.prefix.includes(term)) found.push(k);
        // One more than the page tells whether more follow; stop at the key that filled the page.
        if (found.length > q.limit) return pageOf(found, q.limit, (d) => this.view(d));
      }
      if (rows.length < chunk) return pageOf(found, q.limit, (d) => this.view(d)); // the whole list was searched
      chunk = Math.min(chunk * 4, SEARCH_BUDGET - examined);
    }
    // The budget ran out first: what was found, and where to go on from.
    return { data: found.map((d) => this.view(d)), has_more: true, next_after: String(after) };
  }

  private statusFilter(userId: number, status: KeyStatus | undefined): Filter {
    const now = new Date(this.now());
    switch (status) {
      case 'revoked':
        return { user_id: userId, revoked_at: { $ne: null } };
      case 'active':
        return { user_id: userId, revoked_at: null, $or: [{ expires_at: null }, { expires_at: { $gt: now } }] };
      case 'expired':
        return { user_id: userId, revoked_at: null, expires_at: { $ne: null, $lte: now } };
      default:
        return { user_id: userId };
    }
  }

  private async own(userId: number, id: number): Promise<KeyDoc> {
    const k = await this.keys.findOne({ _id: id, user_id: userId });
    if (!k) throw new ApiError('not_found', `No key ${id} on your account.`);
    return k;
  }

  async get(userId: number, id: number): Promise<PublicKey & { api_key: string }> {
    const k = await this.own(userId, id);
    return { ...this.view(k), api_key: await this.sign(k) };
  }

  async revoke(userId: number, id: number): Promise<PublicKey> {
    const k = await this.own(userId, id);
    if (!k.revoked_at) {
      const at = new Date(this.now());
      await this.keys.updateOne({ _id: id, revoked_at: null }, { $set: { revoked_at: at } });
    }
    return this.view((await this.keys.findOne({ _id: id }))!);
  }

  async updateByOwner(userId: number, id: number, patch: { name?: string } & Partial<Limits>): Promise<PublicKey> {
    await this.own(userId, id);
    const set: Record<string, unknown> = limitsSet(patch, 'user');
    if (patch.name !== undefined) set.name = patch.name;
    const k = await this.keys.findOneAndUpdate({ _id: id, user_id: userId }, { $set: set }, { returnDocument: 'after' });
    return this.view(k!);
  }

  /** Operators: the key with this exact prefix, whoever owns it, or null. */
  async findByPrefix(prefix: string): Promise<(PublicKey & { user_id: number }) | null> {
    const k = await this.keys.findOne({ prefix });
    return k ? { ...this.view(k), user_id: k.user_id } : null;
  }

  async updateByAdmin(id: number, patch: Partial<Limits>): Promise<PublicKey & { user_id: number }> {
    const k = await this.keys.findOneAndUpdate({ _id: id }, { $set: limitsSet(patch, 'admin') }, { returnDocument: 'after' });
    if (!k) throw new ApiError('not_found', `No key ${id}.`);
    return { ...this.view(k), user_id: k.user_id };
  }

  /**
   * Authenticates an `Authorization` header value for a /v1 route needing `scope`.
   * 401 invalid_api_key (missing, malformed, bad signature, unknown, revoked, expired: type
   * authentication_error for expiry) or 403 permission_denied naming the missing scope.
   */
  async authenticate(header: string | undefined, scope: Exclude<Scope, '*'>): Promise<ApiKeyPrincipal> {
    const token = bearerToken(header);
    if (!token) throw new ApiError('invalid_api_key', 'Missing API key: send Authorization: Bearer sk-live-...');
    const claims = await this.verifySignature(token);
    if (!claims) throw new ApiError('invalid_api_key', 'Invalid API key.');
    const k = claims.keyId === undefined ? await this.keys.findOne({ jti: claims.jti }) : await this.keys.findOne({ _id: claims.keyId });
    if (!k || k.jti !== claims.jti || k.user_id !== claims.sub || !sameHash(k.token_hash, claims.hash))
      throw new ApiError('invalid_api_key', 'Invalid API key.');
    claims.keyId = k._id; // the cached entry: next time a point read
    if (k.revoked_at) throw new ApiError('invalid_api_key', 'This API key has been revoked.');
    const nowMs = this.now();
    if (k.expires_at && k.expires_at.getTime() <= nowMs) {
      await this.keyExpired(k);
      throw new ApiError('invalid_api_key', `This API key expired at ${k.expires_at.toISOString()}.`, { type: 'authentication_error' });
    }
    if (!k.scopes.includes('*') && !k.scopes.includes(scope)) {
      throw new ApiError('permission_denied', `This API key lacks the '${scope}' scope.`, { param: scope });
    }
    this.touch(k, nowMs);
    return {
      keyId: k._id,
      jti: k.jti,
      prefix: k.prefix,
      userId: k.user_id,
      scopes: k.scopes,
      ...effectiveLimits(k),
    };
  }

  private async verifySignature(token: string): Promise<VerifiedToken | null> {
    const hit = this.verified?.get(token);
    if (hit) return hit;
    if (!token.startsWith(KEY_PREFIX) || token.length > 2048) return null;
    try {
      // compactVerify checks the signature only (algorithm pinned); expiry is judged on the stored
      // record so an expired key is told apart from a forged one.
      const { payload } = await compactVerify(token.slice(KEY_PREFIX.length), await this.secret, { algorithms: ['HS256'] });
      const claims = JSON.parse(new TextDecoder().decode(payload)) as { sub?: unknown; jti?: unknown };
      const sub = Number(claims.sub);
      if (typeof claims.jti !== 'string' || !Number.isSafeInteger(sub)) return null;
      const out = { jti: claims.jti, sub, hash: sha256(token) };
      this.verified?.set(token, out);
      return out;
    } catch {
      return null;
    }
  }

  /** Emits key_expired once per key: the conditional update lets exactly one request win. */
  private async keyExpired(k: KeyDoc): Promise<void> {
    if (k.expired_event_at) return;
    const res = await this.keys.updateOne({ _id: k._id, expired_event_at: null }, { $set: { expired_event_at: new Date(this.now()) } });
    if (res.modifiedCount === 1) {
      await this.events.emit({
        event: 'key_expired',
        owner: { type: 'user', id: k.user_id },
        fields: { key_prefix: k.prefix, expired_at: k.expires_at!.toISOString() },
      });
    }
  }

  /** last_used_at is written at most once per interval per key, off the request's path. */
  private touch(k: KeyDoc, nowMs: number): void {
    const interval = this.config.lastUsedWriteIntervalSeconds * 1000;
    if (k.last_used_at && nowMs - k.last_used_at.getTime() < interval) return;
    const stale = new Date(nowMs - interval);
    void this.keys
      .updateOne({ _id: k._id, $or: [{ last_used_at: null }, { last_used_at: { $lte: stale } }] }, { $set: { last_used_at: new Date(nowMs) } })
      .catch(() => undefined);
  }
}

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}

function sameHash(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

function normalizeScopes(input: string[] | undefined): Scope[] {
  if (input === undefined) return ['*'];
  if (input.length === 0) throw new ApiError('invalid_request', 'scopes must name at least one scope, or be omitted for all (*).', { param: 'scopes' });
  for (const s of input) {
    if (!(SCOPES as readonly string[]).includes(s)) {
      throw new ApiError('invalid_request', `Unknown scope '${s}'; valid scopes: ${SCOPES.join(', ')}.`, { param: 'scopes' });
    }
  }
  return [...new Set(input)] as Scope[];
}

/** ISO 8601 in UTC (a trailing Z or +00:00), as the spec's expires_at. */
export function parseIsoUtc(s: string, param: string): Date {
  const ok = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]00:?00)$/.test(s);
  const d = new Date(s);
  if (!ok || Number.isNaN(d.getTime())) {
    throw new ApiError('invalid_request', `${param} must be an ISO 8601 UTC timestamp such as 2027-01-31T00:00:00Z.`, { param });
  }
  return d;
}
