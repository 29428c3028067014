import Link from 'next/link';
import { createUserAction, resetPasswordAction, setDisabledAction, setRolesAction, unlockSignInAction } from '@/app/actions/users';
import { ActionForm, FieldError } from '@/components/auth/ActionForm';
import styles from '@/components/auth/auth.module.css';
import { Forbidden } from '@/components/auth/Forbidden';
import { formatUtc } from '@/components/ui/time';
import { recentAuthEvents } from '@/lib/auth/events';
import { can, ROLE_DESCRIPTIONS, ROLE_LABELS, ROLES, type Role } from '@/lib/auth/permissions';
import { signInLimits } from '@/lib/auth/rate-limit';
import { USERNAME_RULE } from '@/lib/auth/schemas';
import { requirePageUser } from '@/lib/auth/server';
import type { UserView } from '@/lib/auth/types';
import { listUsers, signInFailuresByUsername, USERS_PAGE_SIZE, type UserPage } from '@/lib/auth/users';
import { ValidationError } from '@/lib/shared/errors';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Users · Bridge Console' };

/**
 * The role checkboxes. `adminLocked` keeps the admin box checked and disabled with its reason beside it (the only
 * enabled admin cannot drop their own admin role; the server refuses it too): a disabled box is not submitted, so
 * a hidden field sends the role it keeps.
 */
function RoleBoxes({ checked, adminLocked }: { checked: Role[]; adminLocked?: { reasonId: string } }) {
  return (
    <>
      {ROLES.map((role) => {
        const locked = role === 'admin' && adminLocked;
        return (
          <label key={role} title={ROLE_DESCRIPTIONS[role]}>
            <input
              type="checkbox"
              name={locked ? undefined : 'roles'}
              value={role}
              defaultChecked={checked.includes(role)}
              disabled={!!locked}
              aria-describedby={locked ? adminLocked.reasonId : undefined}
            />{' '}
            {ROLE_LABELS[role]}
            {locked && <input type="hidden" name="roles" value="admin" />}
          </label>
        );
      })}
    </>
  );
}

function AccountActions({ user, isMe, failures }: { user: UserView; isMe: boolean; failures?: { failures: number; locked: boolean } }) {
  return (
    <div className={styles.actions}>
      {isMe ? (
        // Not offered: disabling yourself is refused, and a reset would sign you out with a password meant for someone else.
        <p className={styles.muted}>
          Your own account: another admin can disable it or reset its password. <Link href="/account/password">Change your password</Link>
        </p>
      ) : (
        <>
          {user.disabled ? (
            <ActionForm action={setDisabledAction} submitLabel="Enable" variant="secondary" inline>
              <input type="hidden" name="userId" value={user.id} />
              <input type="hidden" name="disabled" value="false" />
            </ActionForm>
          ) : (
            <ActionForm
              action={setDisabledAction}
              submitLabel="Disable"
              variant="danger"
              inline
              confirm={{
                title: `Disable ${user.username}?`,
                body: (
                  <p>
                    <strong>{user.username}</strong> is signed out of every session at once, their API tokens stop working, and they cannot sign in
                    until an admin enables the account again. Their roles, tokens and history are kept.
                  </p>
                ),
                confirmLabel: `Disable ${user.username}`,
              }}
            >
              <input type="hidden" name="userId" value={user.id} />
              <input type="hidden" name="disabled" value="true" />
            </ActionForm>
          )}
          <ActionForm
            action={resetPasswordAction}
            submitLabel="Reset password"
            variant="secondary"
            inline
            confirm={{
              title: `Reset ${user.username}’s password?`,
              body: (
                <p>
                  Their current password stops working and they are signed out everywhere. A new one-time password is shown here once, for you
                  to pass on; they must choose their own when they sign in with it. Their API tokens keep working.
                </p>
              ),
              confirmLabel: 'Reset password',
            }}
          >
            <input type="hidden" name="userId" value={user.id} />
          </ActionForm>
        </>
      )}
      {failures && (
        <ActionForm action={unlockSignInAction} submitLabel="Unlock sign-in" variant="secondary" inline>
          <input type="hidden" name="userId" value={user.id} />
        </ActionForm>
      )}
    </div>
  );
}

/** The search box over the list and the way on to the next page: the URL carries both, so a view can be shared. */
function UserListNav({ q, after, shown, list }: { q: string; after: string; shown: number; list: UserPage }) {
  const link = (params: Record<string, string>) => {
    const search = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== ''));
    return search.size ? `/admin/users?${search}` : '/admin/users';
  };
  return (
    <div className={styles.listNav}>
      <form method="get" action="/admin/users" role="search" aria-label="Find users">
        <label className={styles.label}>
          Username contains
          <input className={styles.input} type="search" name="q" defaultValue={q} maxLength={64} autoComplete="off" />
        </label>
        <button type="submit" className={styles.secondary}>
          Find
        </button>
      </form>
      <span className={styles.muted} data-testid="users-shown">
        {list.matching === 0
          ? q
            ? `No username contains “${q}”.`
            : 'No users.'
          : `${shown} of ${list.matching} user${list.matching === 1 ? '' : 's'}${q ? ` whose name contains “${q}”` : ''}${after ? `, after ${after}` : ''}`}
      </span>
      {after && <Link href={link({ q })}>First page</Link>}
      {list.next && <Link href={link({ q, after: list.next })}>Next {USERS_PAGE_SIZE} →</Link>}
      {q && <Link href="/admin/users">All users</Link>}
    </div>
  );
}

export default async function UsersPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const me = await requirePageUser('/admin/users');
  if (!can(me, 'users.manage')) return <Forbidden permission="users.manage" />;
  const params = await searchParams;
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) ?? '';
  const q = one(params.q).trim();
  const after = one(params.after);
  let list: UserPage;
  let refused: string | null = null;
  try {
    list = await listUsers(me, { q: q || undefined, after: after || undefined });
  } catch (err) {
    // A hand-edited link: say what is wrong with it and show the first page.
    if (!(err instanceof ValidationError)) throw err;
    refused = err.message;
    list = await listUsers(me);
  }
  const [events, failures] = await Promise.all([recentAuthEvents(30), signInFailuresByUsername(me)]);
  const users = list.users;
  const enabledAdmins = list.enabledAdmins;
  const windowMinutes = Math.round(signInLimits().windowMs / 60_000);
  return (
    <div className={styles.page}>
      <h1>Users</h1>
      <section className={styles.section}>
        <h2>New user</h2>
        <p className={styles.muted}>They get a one-time password, shown here once, and choose their own at first sign-in.</p>
        <ActionForm action={createUserAction} submitLabel="Create user" testId="create-user" ariaLabel="New user" fieldLabels={{ username: 'Username', roles: 'Roles' }}>
          <label className={styles.label}>
            Username
            <input className={styles.input} name="username" required maxLength={64} autoComplete="off" aria-describedby="new-user-username-hint new-user-username-error" />
            <span id="new-user-username-hint" className={styles.hint}>
              {USERNAME_RULE[0].toUpperCase() + USERNAME_RULE.slice(1)}.
            </span>
            <FieldError name="username" id="new-user-username-error" />
          </label>
          <fieldset className={styles.fieldset} aria-describedby="new-user-roles-hint">
            <legend>Roles</legend>
            <div className={styles.inline}>
              <RoleBoxes checked={['viewer']} />
            </div>
            <span id="new-user-roles-hint" className={styles.hint}>
              At least one. Viewer reads everything and changes nothing; the others add what their name says (hover for details).
            </span>
            <FieldError name="roles" />
          </fieldset>
        </ActionForm>
      </section>
      <section className={styles.section}>
        <h2>All users</h2>
        {refused && (
          <p role="alert" className={styles.error}>
            {refused}
          </p>
        )}
        <UserListNav q={refused ? '' : q} after={refused ? '' : after} shown={users.length} list={list} />
        <table className={styles.table}>
          <thead>
            <tr>
              <th>User</th>
              <th>Roles</th>
              <th>Last sign-in</th>
              <th>Account</th>
            </tr>
          </thead>
          <tbody>
            {users.map((u) => {
              const isMe = u.id === me.userId;
              const adminLocked = isMe && u.roles.includes('admin') && !u.disabled && enabledAdmins === 1;
              const failed = failures.get(u.username);
              return (
                <tr key={u.id} data-testid={`user-${u.username}`}>
                  <td>
                    <strong>{u.username}</strong>
                    {isMe && <span className={styles.muted}> (you)</span>}
                    <div className={styles.muted}>
                      created {formatUtc(u.createdAt)}
                      {u.createdBy ? ` by ${u.createdBy}` : ''}
                    </div>
                    {u.disabled && <span className={styles.badge}>disabled</span>}
                    {u.mustChangePassword && <span className={styles.badge}>one-time password</span>}
                    {u.roles.length === 0 && <span className={styles.badgeWarn}>no roles: opens no page</span>}
                    {failed && (
                      <span className={failed.locked ? styles.badgeWarn : styles.badge} data-testid="sign-in-failures">
                        {failed.locked ? 'sign-in locked: ' : ''}
                        {failed.failures} failed sign-in{failed.failures === 1 ? '' : 's'} in {windowMinutes} min
                      </span>
                    )}
                  </td>
                  <td>
                    <ActionForm action={setRolesAction} submitLabel="Save roles" variant="secondary" inline onRefusal="restore" ariaLabel={`Roles of ${u.username}`}>
                      <input type="hidden" name="userId" value={u.id} />
                      <RoleBoxes checked={u.roles} adminLocked={adminLocked ? { reasonId: `admin-locked-${u.id}` } : undefined} />
                      {adminLocked && (
                        <span id={`admin-locked-${u.id}`} className={styles.hint}>
                          You are the only enabled admin, so you cannot remove your own admin role: make someone else an admin first.
                        </span>
                      )}
                    </ActionForm>
                  </td>
                  <td>{u.lastSignInAt ? formatUtc(u.lastSignInAt) : '—'}</td>
                  <td>
                    <AccountActions user={u} isMe={isMe} failures={failed} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </section>
      <section className={styles.section}>
        <h2>Recent security events</h2>
        <table className={styles.table}>
          <thead>
            <tr>
              <th>When</th>
              <th>What</th>
              <th>Who</th>
              <th>Whom</th>
              <th>From</th>
            </tr>
          </thead>
          <tbody>
            {events.map((e) => (
              <tr key={e.id}>
                <td>{formatUtc(e.at)}</td>
                <td>{e.action}</td>
                <td>{e.actor}</td>
                <td>{e.subject ?? ''}</td>
                <td>{e.ip ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </div>
  );
}
