import { ChangePasswordForm } from '@/components/auth/ChangePasswordForm';
import styles from '@/components/auth/auth.module.css';
import { PASSWORD_MIN } from '@/lib/auth/password';
import { requirePageUser } from '@/lib/auth/server';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Password · Bridge Console' };

export default async function PasswordPage() {
  const user = await requirePageUser('/account/password', { allowPasswordChange: true });
  return (
    <div className={styles.narrow}>
      <h1>Change password</h1>
      {user.mustChangePassword ? (
        <p role="alert">
          Signed in as <strong>{user.name}</strong> with a one-time password: choose your own before going on.
        </p>
      ) : (
        <p className="muted">Signed in as {user.name}. Your other sessions are signed out when you change it.</p>
      )}
      <ChangePasswordForm minLength={PASSWORD_MIN} />
    </div>
  );
}
