// The Campaigns pages, a chunk of their own (loaded by dynamic import when a campaigns address is
// first opened: campaigns-gate.tsx), so the account bundle every page loads does not carry them.
import { CampaignPage } from './campaign.tsx';
import { NewCampaignPage } from './campaign-new.tsx';
import { CampaignsPage } from './campaigns.tsx';

/** `rest`: the path below /dashboard/campaigns, split on '/'. */
export function CampaignsRoutes({ rest }: { rest: string[] }) {
  return rest[0] === 'new' ? <NewCampaignPage /> : rest[0] ? <CampaignPage id={rest[0]} /> : <CampaignsPage />;
}
