import { Page } from '../../ui/components.tsx';

export function WebhooksPage() {
  return <Page title="Webhooks">{null}</Page>;
}
export function WebhookDeliveriesPage({ id }: { id: string }) {
  return <Page title={`Webhook ${id}`}>{null}</Page>;
}
