// What every page receives: the API client and the signed-in user (null before sign-in).
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Api } from './api.ts';

export interface Me {
  user: { id: number; email: string; created_at: string };
  organization: { id: number; role: 'owner' | 'admin' | 'member' } | null;
}

/** GET /portal/session: 200 whether or not the visitor is signed in. */
export type SessionState = ({ signed_in: true } & Me) | { signed_in: false };

export interface Session {
  api: Api;
  me: Me | null;
  /** Re-reads /portal/session (after sign-in, joining or leaving an organization). */
  refresh(): Promise<Me | null>;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside the app');
  return s;
}
