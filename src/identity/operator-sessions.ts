// Operator sessions: the dashboard exchanges the admin token for a short server-side session (an
// opaque random id in a cookie), so the token is never kept by the page. Only the id's SHA-256 is
// stored, with a fingerprint of the admin token it was opened with: changing ADMIN_TOKEN ends them.
import { randomBytes } from 'node:crypto';
import type { Store } from '../store/port.ts';
import { sha256 } from '../shared/hash.ts';
import type { Clock } from '../shared/common.ts';

interface OperatorSessionDoc {
  _id: string; // sha256 of the id
  token_fp: string;
  created_at: Date;
  expires_at: Date;
  [k: string]: unknown;
}

export const OPERATOR_SESSION_TTL_SECONDS = 900;
const ID_PREFIX = 'op_';

export class OperatorSessions {
  private readonly sessions;

  constructor(
    store: Store,
    private readonly now: Clock,
    private readonly ttlSeconds = OPERATOR_SESSION_TTL_SECONDS,
  ) {
    this.sessions = store.collection<OperatorSessionDoc>('operator_sessions');
  }

  async init(): Promise<void> {
    await this.sessions.createIndex({ keys: { expires_at: 1 }, expireAfterSeconds: 0 });
  }

  /** Opens a session for whoever holds `adminToken` (already checked); returns its id and expiry. */
  async open(adminToken: string): Promise<{ id: string; expires_at: Date; ttl_seconds: number }> {
    const id = ID_PREFIX + randomBytes(32).toString('base64url');
    const created = new Date(this.now());
    const expires = new Date(created.getTime() + this.ttlSeconds * 1000);
    await this.sessions.insertOne({ _id: sha256(id), token_fp: sha256(adminToken), created_at: created, expires_at: expires });
    return { id, expires_at: expires, ttl_seconds: this.ttlSeconds };
  }

  /** The session's expiry, or null when the id is unknown, expired, revoked or from another admin token. */
  async check(id: string, adminToken: string): Promise<Date | null> {
    if (!id.startsWith(ID_PREFIX) || id.length > 100) return null;
    const doc = await this.sessions.findOne({ _id: sha256(id), expires_at: { $gt: new Date(this.now()) } });
    return doc && doc.token_fp === sha256(adminToken) ? doc.expires_at : null;
  }

  async revoke(id: string): Promise<boolean> {
    if (!id.startsWith(ID_PREFIX) || id.length > 100) return false;
    return (await this.sessions.deleteOne({ _id: sha256(id) })).deletedCount === 1;
  }
}
