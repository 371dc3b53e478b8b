// What an organization role may do outside the organization page, as the API enforces it (the
// organization page's own rules live with it): the pages hide what the API would refuse.
import type { Me } from './context.tsx';

/** Webhooks: the owner or an admin (src/webhooks/service.ts), or a personal account. */
export const managesWebhooks = (me: Me | null): boolean => me?.organization?.role !== 'member';

/** Billing settings (the low-balance threshold): the owner only (src/billing/portal.ts), or a personal account. */
export const managesBilling = (me: Me | null): boolean => !me?.organization || me.organization.role === 'owner';

/** A call's recording's Delete: the owner or an admin (src/voice/recordings.ts), or a personal account. */
export const deletesRecordings = managesWebhooks;
