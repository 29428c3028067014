import Link from 'next/link';
import { signOutAction } from '@/app/actions/auth';
import { can, ROLE_LABELS } from '@/lib/auth/permissions';
import { currentUser } from '@/lib/auth/server';
import styles from './auth.module.css';

/** For the console shell's header: who is signed in, their roles, account links, sign-out. */
export async function UserMenu() {
  const user = await currentUser();
  if (!user) {
    return (
      <div className={styles.userMenu}>
        <Link href="/sign-in">Sign in</Link>
      </div>
    );
  }
  return (
    <div className={styles.userMenu} data-testid="user-menu">
      <span>
        <strong data-testid="signed-in-user">{user.name}</strong>{' '}
        {user.roles.map((r) => (
          <span key={r} className={styles.badge}>
            {ROLE_LABELS[r]}
          </span>
        ))}
      </span>
      <Link href="/account/tokens">API tokens</Link>
      {can(user, 'users.manage') && <Link href="/admin/users">Users</Link>}
      <form action={signOutAction}>
        <button type="submit" className={styles.secondary}>
          Sign out
        </button>
      </form>
    </div>
  );
}
