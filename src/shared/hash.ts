// The one hash the services store secrets under: SHA-256, hex. Portal session tokens, API keys'
// tokens and operator session ids are kept only as this digest (identity/accounts.ts, keys.ts,
// operator-sessions.ts), so a leaked store gives no usable token.
import { createHash } from 'node:crypto';

export const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
