import { Page } from '../../ui/components.tsx';

export function JobsPage() {
  return <Page title="Transcriptions">{null}</Page>;
}
