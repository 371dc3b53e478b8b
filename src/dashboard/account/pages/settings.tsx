import { Page } from '../../ui/components.tsx';

export function SettingsPage() {
  return <Page title="Settings">{null}</Page>;
}
