import { Page } from '../../ui/components.tsx';

export function OperatorGate() {
  return <Page title="Operator">{null}</Page>;
}
