import { Page } from '../../ui/components.tsx';

export function WalletPage() {
  return <Page title="Wallet">{null}</Page>;
}
