import { permissionDeniedMessage, type Permission } from '@/lib/auth/permissions';
import { currentUser } from '@/lib/auth/server';
import styles from './auth.module.css';

/**
 * What a signed-in user sees on a page their roles do not open: which role would open it and which they hold,
 * in words (the permission's machine name is left in a data attribute for tests and support).
 */
export async function Forbidden({ permission }: { permission: Permission }) {
  const user = await currentUser();
  return (
    <div className={styles.page}>
      <h1>Not allowed</h1>
      <p role="alert" data-permission={permission}>
        {permissionDeniedMessage(permission, user?.roles ?? [])} Ask an administrator if you need it.
      </p>
    </div>
  );
}
