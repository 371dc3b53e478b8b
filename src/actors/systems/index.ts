// The runtime's systems, each a small class over the shared Resources; they reach each other
// through this one object (filled by src/actors/runtime.ts).
import type { Claims } from './claims.ts';
import type { InboxSystem } from './inbox.ts';
import type { Leases } from './leases.ts';
import type { Persistence } from './persistence.ts';
import type { Residency } from './residency.ts';
import type { Retention } from './retention.ts';
import type { Steps } from './steps.ts';

export interface Systems {
  residency: Residency;
  leases: Leases;
  persistence: Persistence;
  inbox: InboxSystem;
  steps: Steps;
  claims: Claims;
  retention: Retention;
}
