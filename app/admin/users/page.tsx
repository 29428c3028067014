import { createUserAction, resetPasswordAction, setDisabledAction, setRolesAction } from '@/app/actions/users';
import { ActionForm } from '@/components/auth/ActionForm';
import styles from '@/components/auth/auth.module.css';
import { formatUtc } from '@/components/ui/time';
import { Forbidden } from '@/components/auth/Forbidden';
import { recentAuthEvents } from '@/lib/auth/events';
import { can, ROLE_DESCRIPTIONS, ROLE_LABELS, ROLES, type Role } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';
import { listUsers } from '@/lib/auth/users';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Users · Bridge Console' };

function RoleBoxes({ checked }: { checked: Role[] }) {
  return (
    <>
      {ROLES.map((role) => (
        <label key={role} title={ROLE_DESCRIPTIONS[role]}>
          <input type="checkbox" name="roles" value={role} defaultChecked={checked.includes(role)} /> {ROLE_LABELS[role]}
        </label>
      ))}
    </>
  );
}

export default async function UsersPage() {
  const me = await requirePageUser('/admin/users');
  if (!can(me, 'users.manage')) return <Forbidden permission="users.manage" />;
  const [users, events] = await Promise.all([listUsers(me), recentAuthEvents(30)]);
  return (
    <main className={styles.page}>
      <h1>Users</h1>
      <section className={styles.section}>
        <h2>New user</h2>
        <p className={styles.muted}>They get a one-time password, shown here once, and choose their own at first sign-in.</p>
        <ActionForm action={createUserAction} submitLabel="Create user" testId="create-user">
          <label className={styles.label}>
            Username
            <input className={styles.input} name="username" required maxLength={64} pattern="[A-Za-z0-9][A-Za-z0-9._\-]{1,63}" />
          </label>
          <div className={styles.inline}>
            <RoleBoxes checked={['viewer']} />
          </div>
        </ActionForm>
      </section>
      <section className={styles.section}>
        <h2>All users</h2>
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
            {users.map((u) => (
              <tr key={u.id} data-testid={`user-${u.username}`}>
                <td>
                  <strong>{u.username}</strong>
                  {u.id === me.userId && <span className={styles.muted}> (you)</span>}
                  <div className={styles.muted}>
                    created {formatUtc(u.createdAt)}
                    {u.createdBy ? ` by ${u.createdBy}` : ''}
                  </div>
                  {u.disabled && <span className={styles.badge}>disabled</span>}
                  {u.mustChangePassword && <span className={styles.badge}>one-time password</span>}
                </td>
                <td>
                  <ActionForm action={setRolesAction} submitLabel="Save roles" variant="secondary" inline>
                    <input type="hidden" name="userId" value={u.id} />
                    <RoleBoxes checked={u.roles} />
                  </ActionForm>
                </td>
                <td>{u.lastSignInAt ? formatUtc(u.lastSignInAt) : '—'}</td>
                <td>
                  <ActionForm
                    action={setDisabledAction}
                    submitLabel={u.disabled ? 'Enable' : 'Disable'}
                    variant={u.disabled ? 'secondary' : 'danger'}
                    inline
                    confirm={u.disabled ? undefined : `Disable ${u.username}? They are signed out and their API tokens stop working.`}
                  >
                    <input type="hidden" name="userId" value={u.id} />
                    <input type="hidden" name="disabled" value={u.disabled ? 'false' : 'true'} />
                  </ActionForm>
                  <ActionForm action={resetPasswordAction} submitLabel="Reset password" variant="secondary" inline confirm={`Issue ${u.username} a new one-time password and sign them out?`}>
                    <input type="hidden" name="userId" value={u.id} />
                  </ActionForm>
                </td>
              </tr>
            ))}
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
    </main>
  );
}
