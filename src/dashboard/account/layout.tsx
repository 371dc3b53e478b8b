// The frame around every signed-in page: navigation, who is signed in, sign out (here or everywhere).
import type { ComponentChildren } from 'preact';
import { useSession } from '../ui/context.tsx';
import { ErrorBox, useAction } from '../ui/components.tsx';
import { href, useRoute } from '../ui/router.tsx';

const NAV: [string, string][] = [
  ['keys', 'API keys'],
  ['usage', 'Usage'],
  ['wallet', 'Wallet'],
  ['settings', 'Settings'],
  ['webhooks', 'Webhooks'],
  ['organization', 'Organization'],
  ['jobs', 'Transcriptions'],
  ['calls', 'Calls'],
  ['numbers', 'Numbers'],
  ['campaigns', 'Campaigns'],
  ['speech', 'Try speech'],
  ['recognition', 'Try recognition'],
  ['operator', 'Operator'],
];

export function Layout({ children }: { children: ComponentChildren }) {
  const { api, me, refresh } = useSession();
  const route = useRoute();
  const top = route.path.split('/')[0] || 'keys';
  const signOut = useAction();
  const out = (everywhere: boolean) =>
    signOut.run(async () => {
      await api.send('POST', '/portal/auth/logout', everywhere ? { everywhere: true } : {});
      await refresh();
      route.navigate('signin');
    });
  return (
    <div class="frame">
      <header class="top">
        <a class="brand" href={href('keys')}>
          Gateway
        </a>
        <nav aria-label="Main">
          <ul>
            {NAV.map(([to, label]) => (
              <li key={to}>
                <a href={href(to)} aria-current={top === to ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {me ? (
          <div class="who">
            <span>{me.user.email}</span>
            <button type="button" onClick={() => out(false)} disabled={signOut.busy}>
              Sign out
            </button>
            <button type="button" class="quiet" onClick={() => out(true)} disabled={signOut.busy}>
              Sign out everywhere
            </button>
          </div>
        ) : null}
      </header>
      <ErrorBox error={signOut.error} />
      <main>{children}</main>
    </div>
  );
}
