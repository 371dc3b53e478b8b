// Request ids: `req_` and 32 hex digits, minted by the gateway for every answer (a client-sent id
// is never trusted). randomUUID draws from a pooled buffer; randomBytes per request showed in profiles.
import { randomUUID } from 'node:crypto';

export const newRequestId = (): string => `req_${randomUUID().replaceAll('-', '')}`;
