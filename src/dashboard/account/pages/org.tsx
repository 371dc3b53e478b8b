import { Page } from '../../ui/components.tsx';

export function OrgPage() {
  return <Page title="Organization">{null}</Page>;
}
