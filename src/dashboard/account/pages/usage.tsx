import { Page } from '../../ui/components.tsx';

export function UsagePage() {
  return <Page title="Usage">{null}</Page>;
}
