// The organization: create one (or accept an invitation), members and their roles, invite by e-mail,
// change a member's role, remove, leave, transfer ownership, delete. Each action is shown only to the
// roles the API lets do it (owner: everything; admin: invite, revoke invitations, remove members;
// member: leave); the API enforces the same, and its refusal is shown as it is.
import { useSession } from '../../ui/context.tsx';
import { cents, confirmed, ErrorBox, Field, formValue, Loading, Page, useAction, useLoad, utc } from '../../ui/components.tsx';
import { DataTable } from '../../ui/table.tsx';

interface Org {
  id: number;
  name: string;
  wallet_cents: number;
  created_at: string;
  role?: string;
}
interface Member {
  user_id: number;
  email: string;
  role: 'owner' | 'admin' | 'member';
  joined_at: string;
}
interface Invitation {
  id: number;
  email: string;
  role: string;
  expires_at: string;
}
interface Received {
  id: number;
  org_name: string;
  role: string;
  inviter_email: string;
  expires_at: string;
}

export function OrgPage() {
  const { me } = useSession();
  return <Page title="Organization">{me?.organization ? <Membership role={me.organization.role} /> : <NoOrg />}</Page>;
}

function NoOrg() {
  const { api, refresh } = useSession();
  const received = useLoad(() => api.get<{ invitations: Received[] }>('/portal/invitations'), []);
  const act = useAction();
  return (
    <>
      <p class="muted">You do not belong to an organization: your keys spend from your own wallet.</p>
      <form
        class="card"
        aria-label="New organization"
        onSubmit={(e) => {
          e.preventDefault();
          const name = formValue(e, 'name').trim();
          void act.run(async () => {
            await api.send('POST', '/portal/org', { name });
            await refresh();
          });
        }}
      >
        <h2>Create an organization</h2>
        <Field label="Organization name">
          <input name="name" required maxLength={200} />
        </Field>
        <button type="submit" class="primary" disabled={act.busy}>
          Create organization
        </button>
      </form>
      <ErrorBox error={act.error} />
      <h2>Invitations for you</h2>
      <Loading loaded={received} />
      {received.data?.invitations.length === 0 ? <p class="muted">None.</p> : null}
      <ul>
        {received.data?.invitations.map((i) => (
          <li key={i.id}>
            {i.org_name} ({i.role}), from {i.inviter_email}, until {utc(i.expires_at)}{' '}
            <button
              type="button"
              class="primary"
              onClick={() =>
                act.run(async () => {
                  await api.send('POST', `/portal/invitations/${i.id}/accept`);
                  await refresh();
                })
              }
            >
              Accept <span class="sr-only">{i.org_name}</span>
            </button>{' '}
            <button type="button" onClick={() => act.run(async () => void (await api.send('POST', `/portal/invitations/${i.id}/decline`), received.reload()))}>
              Decline <span class="sr-only">{i.org_name}</span>
            </button>
          </li>
        ))}
      </ul>
    </>
  );
}

function Membership({ role }: { role: 'owner' | 'admin' | 'member' }) {
  const { api, me, refresh } = useSession();
  const org = useLoad(() => api.get<Org>('/portal/org'), []);
  const members = useLoad(() => api.get<{ members: Member[] }>('/portal/org/members'), []);
  const manager = role === 'owner' || role === 'admin';
  const invitations = useLoad(
    () => (manager ? api.get<{ invitations: Invitation[] }>('/portal/org/invitations') : Promise.resolve({ invitations: [] })),
    [manager],
  );
  const act = useAction();
  const after = async (p: Promise<unknown>, leaving = false) => {
    await p;
    if (leaving) await refresh();
    else {
      members.reload();
      invitations.reload();
      org.reload();
    }
  };
  const others = members.data?.members.filter((m) => m.user_id !== me?.user.id) ?? [];
  // Roles change between admin and member, by the owner only; the owner's own role moves by transfer.
  const canSetRole = (m: Member) => role === 'owner' && m.role !== 'owner';
  const canRemove = (m: Member) => m.user_id !== me?.user.id && m.role !== 'owner' && (role === 'owner' || (role === 'admin' && m.role === 'member'));

  return (
    <>
      <Loading loaded={org} />
      {org.data ? (
        <div class="card">
          <h2>{org.data.name}</h2>
          <dl class="facts">
            <dt>Your role</dt>
            <dd data-testid="my-role">{role}</dd>
            <dt>Wallet</dt>
            <dd>{cents(org.data.wallet_cents)}</dd>
            <dt>Created</dt>
            <dd>{utc(org.data.created_at)}</dd>
          </dl>
        </div>
      ) : null}
      <ErrorBox error={act.error} />
      <h2>Members</h2>
      <Loading loaded={members} />
      {members.data ? (
        <DataTable
          caption="Members"
          testId="members"
          rows={members.data.members}
          rowKey={(m) => m.user_id}
          empty="No members."
          columns={[
            { label: 'E-mail', cell: (m) => m.email },
            { label: 'Role', cell: (m) => m.role },
            { label: 'Joined', cell: (m) => utc(m.joined_at) },
            {
              label: 'Actions',
              srOnly: true,
              cell: (m) => (
                <>
                  {canSetRole(m) ? (
                    <button
                      type="button"
                      disabled={act.busy}
                      onClick={() =>
                        act.run(() => after(api.send('PATCH', `/portal/org/members/${m.user_id}`, { role: m.role === 'admin' ? 'member' : 'admin' })))
                      }
                    >
                      {m.role === 'admin' ? 'Make member' : 'Make admin'} <span class="sr-only">{m.email}</span>
                    </button>
                  ) : null}
                  {canRemove(m) ? (
                    <button
                      type="button"
                      class="danger"
                      disabled={act.busy}
                      onClick={() =>
                        confirmed(`Remove ${m.email} from the organization?`) && act.run(() => after(api.send('DELETE', `/portal/org/members/${m.user_id}`)))
                      }
                    >
                      Remove <span class="sr-only">{m.email}</span>
                    </button>
                  ) : null}
                </>
              ),
            },
          ]}
        />
      ) : null}
      {manager ? (
        <>
          <form
            class="card"
            aria-label="Invite a member"
            onSubmit={(e) => {
              e.preventDefault();
              const body = { email: formValue(e, 'email').trim(), role: formValue(e, 'role') };
              const form = e.currentTarget;
              void act.run(async () => {
                await after(api.send('POST', '/portal/org/members', body));
                form.reset();
              });
            }}
          >
            <h2>Invite by e-mail</h2>
            <Field label="E-mail to invite">
              <input name="email" type="email" required maxLength={254} />
            </Field>
            <Field label="Role">
              <select name="role">
                <option value="member">member: uses the organization's wallet</option>
                <option value="admin">admin: also invites and removes members</option>
              </select>
            </Field>
            <button type="submit" class="primary" disabled={act.busy}>
              Send invitation
            </button>
          </form>
          <h2>Pending invitations</h2>
          <Loading loaded={invitations} />
          {invitations.data?.invitations.length === 0 ? <p class="muted">None.</p> : null}
          <ul data-testid="pending-invitations">
            {invitations.data?.invitations.map((i) => (
              <li key={i.id}>
                {i.email} ({i.role}), until {utc(i.expires_at)}{' '}
                <button type="button" onClick={() => act.run(() => after(api.send('DELETE', `/portal/org/invitations/${i.id}`)))}>
                  Revoke <span class="sr-only">invitation of {i.email}</span>
                </button>
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {role === 'owner' ? (
        <div class="card" aria-label="Owner actions" role="region">
          <h2>Owner actions</h2>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              const id = Number(formValue(e, 'user_id'));
              const who = others.find((m) => m.user_id === id)?.email ?? `user ${id}`;
              if (confirmed(`Make ${who} the owner? You become an admin.`))
                void act.run(() => after(api.send('POST', '/portal/org/transfer', { user_id: id }), true));
            }}
          >
            <Field label="Transfer ownership to">
              <select name="user_id" required>
                {others.map((m) => (
                  <option key={m.user_id} value={m.user_id}>
                    {m.email} ({m.role})
                  </option>
                ))}
              </select>
            </Field>
            <button type="submit" disabled={act.busy || others.length === 0}>
              Transfer ownership
            </button>
          </form>
          <p>
            <button
              type="button"
              class="danger"
              disabled={act.busy}
              onClick={() =>
                confirmed('Delete the organization? Its wallet must be empty; members keep their accounts.') &&
                act.run(() => after(api.send('DELETE', '/portal/org'), true))
              }
            >
              Delete organization
            </button>
          </p>
        </div>
      ) : (
        <p>
          <button
            type="button"
            class="danger"
            disabled={act.busy}
            onClick={() => confirmed('Leave the organization?') && act.run(() => after(api.send('POST', '/portal/org/leave'), true))}
          >
            Leave organization
          </button>
        </p>
      )}
    </>
  );
}
