// Accounts and portal sessions: sign-up, login (argon2id, attempt limits per account and address),
// opaque session tokens stored only as SHA-256 hashes, expiring and revocable. A new account's
// wallet is opened by billing (AccountWallets), which owns wallets.
import { randomBytes } from 'node:crypto';
import { hash as argonHash, verify as argonVerify } from '@node-rs/argon2';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { isDuplicateKeyError, type Store } from '../store/port.ts';
import type { AccountWallets } from './account-wallets.ts';
import { nextId, tooManyRequests, WindowCounters, type Clock } from '../shared/common.ts';
import { sha256 } from '../shared/hash.ts';

export interface UserDoc {
  _id: number;
  email: string;
  password_hash: string;
  created_at: Date;
  kyc_verified: boolean;
  [k: string]: unknown;
}

interface SessionDoc {
  _id: string; // sha256 of the token
  user_id: number;
  created_at: Date;
  expires_at: Date;
  [k: string]: unknown;
}

export interface SessionUser {
  id: number;
  email: string;
  sessionHash: string;
}

export interface PublicUser {
  id: number;
  email: string;
  created_at: string;
}

export interface SessionGrant {
  user: PublicUser;
  session_token: string;
  expires_at: string;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/;
const TOKEN_PREFIX = 'sess_';

/** A valid e-mail address, trimmed and lower-cased (as accounts store it); 400 otherwise. */
export function parseEmail(email: unknown): string {
  if (typeof email !== 'string' || !EMAIL.test(email.trim()) || email.length > 254) {
    throw new ApiError('invalid_request', 'email must be a valid e-mail address.', { param: 'email' });
  }
  return email.trim().toLowerCase();
}

export function publicUser(u: UserDoc): PublicUser {
  return { id: u._id, email: u.email, created_at: u.created_at.toISOString() };
}

export class AccountService {
  private readonly users;
  private readonly sessions;
  private readonly windows: WindowCounters;
  /** A real hash to verify against when the e-mail is unknown, so timing does not reveal accounts. */
  private decoyHash: Promise<string> | null = null;

  constructor(
    private readonly store: Store,
    private readonly config: Config['auth'],
    private readonly wallets: AccountWallets,
    private readonly now: Clock,
  ) {
    this.users = store.collection<UserDoc>('users');
    this.sessions = store.collection<SessionDoc>('sessions');
    this.windows = new WindowCounters(store.collection('auth_windows'), now);
  }

  async init(): Promise<void> {
    await this.users.createIndex({ keys: { email: 1 }, unique: true });
    await this.sessions.createIndex({ keys: { user_id: 1 } });
    await this.sessions.createIndex({ keys: { expires_at: 1 }, expireAfterSeconds: 0 });
    await this.windows.init();
  }

  private hashPassword(password: string): Promise<string> {
    const { memoryCost, timeCost, parallelism } = this.config.argon2;
    return argonHash(password, { memoryCost, timeCost, parallelism, algorithm: 2 /* argon2id */ });
  }

  private checkCredentialsShape(email: unknown, password: unknown): { email: string; password: string } {
    const normalized = parseEmail(email);
    if (typeof password !== 'string') throw new ApiError('invalid_request', 'password must be a string.', { param: 'password' });
    return { email: normalized, password };
  }

  async signup(emailIn: string, password: string, address: string): Promise<SessionGrant> {
    const { email } = this.checkCredentialsShape(emailIn, password);
    const { passwordMinLength: min, passwordMaxLength: max } = this.config;
    if (password.length < min || password.length > max) {
      throw new ApiError('invalid_request', `password must be ${min} to ${max} characters long.`, { param: 'password' });
    }
    const hit = await this.windows.hit(`signup:addr:${address}`, 3600);
    if (hit.count > this.config.signupMaxPerAddressPerHour) throw this.tooMany(hit.resetAt, 'Too many sign-ups from this address');
    if (await this.users.findOne({ email })) throw new ApiError('email_taken', 'An account with this e-mail already exists.', { param: 'email' });

    const passwordHash = await this.hashPassword(password);
    const id = await nextId(this.store, 'users');
    const created = new Date(this.now());
    const user: UserDoc = { _id: id, email, password_hash: passwordHash, created_at: created, kyc_verified: false };
    try {
      await this.users.insertOne(user);
    } catch (err) {
      if (isDuplicateKeyError(err)) throw new ApiError('email_taken', 'An account with this e-mail already exists.', { param: 'email' });
      throw err;
    }
    await this.wallets.openWallet({ type: 'user', id }, created);
    return this.openSession(user);
  }

  async login(emailIn: string, password: string, address: string): Promise<SessionGrant> {
    const { email } = this.checkCredentialsShape(emailIn, password);
    const win = this.config.loginWindowSeconds;
    const [acct, addr] = await Promise.all([this.windows.peek(`login:acct:${email}`, win), this.windows.peek(`login:addr:${address}`, win)]);
    if (acct.count >= this.config.loginMaxFailuresPerAccount) throw this.tooMany(acct.resetAt, 'Too many failed logins for this account');
    if (addr.count >= this.config.loginMaxFailuresPerAddress) throw this.tooMany(addr.resetAt, 'Too many failed logins from this address');

    const user = await this.users.findOne({ email });
    const ok = user ? await argonVerify(user.password_hash, password) : await argonVerify(await this.decoy(), password).then(() => false);
    if (!user || !ok) {
      await Promise.all([this.windows.hit(`login:acct:${email}`, win), this.windows.hit(`login:addr:${address}`, win)]);
      throw new ApiError('invalid_credentials', 'E-mail or password is incorrect.');
    }
    await this.windows.reset(`login:acct:${email}`, win);
    return this.openSession(user);
  }

  private decoy(): Promise<string> {
    this.decoyHash ??= this.hashPassword(randomBytes(16).toString('hex'));
    return this.decoyHash;
  }

  private tooMany(resetAt: number, what: string): ApiError {
    return tooManyRequests(resetAt, this.now(), what);
  }

  private async openSession(user: UserDoc): Promise<SessionGrant> {
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const created = new Date(this.now());
    const expires = new Date(created.getTime() + this.config.sessionTtlHours * 3_600_000);
    await this.sessions.insertOne({ _id: sha256(token), user_id: user._id, created_at: created, expires_at: expires });
    return { user: publicUser(user), session_token: token, expires_at: expires.toISOString() };
  }

  /** The user behind a session token, or null when the token is unknown, expired or revoked. */
  async authenticate(token: string): Promise<SessionUser | null> {
    if (!token.startsWith(TOKEN_PREFIX) || token.length > 100) return null;
    const hash = sha256(token);
    // Expiry is compared here, not left to the TTL sweep (which only cleans up).
    const session = await this.sessions.findOne({ _id: hash, expires_at: { $gt: new Date(this.now()) } });
    if (!session) return null;
    const user = await this.users.findOne({ _id: session.user_id });
    return user ? { id: user._id, email: user.email, sessionHash: hash } : null;
  }

  async logout(session: SessionUser, everywhere: boolean): Promise<number> {
    const res = everywhere ? await this.sessions.deleteMany({ user_id: session.id }) : await this.sessions.deleteOne({ _id: session.sessionHash });
    return res.deletedCount;
  }

  async getUser(id: number): Promise<UserDoc | null> {
    return this.users.findOne({ _id: id });
  }

  /** Records an operator's identity verification decision; null when there is no such user. */
  setKyc(id: number, verified: boolean): Promise<UserDoc | null> {
    return this.users.findOneAndUpdate({ _id: id }, { $set: { kyc_verified: verified, kyc_updated_at: new Date(this.now()) } }, { returnDocument: 'after' });
  }

  async findByEmail(email: string): Promise<UserDoc | null> {
    return this.users.findOne({ email: email.trim().toLowerCase() });
  }
}
