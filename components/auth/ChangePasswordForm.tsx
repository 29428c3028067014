'use client';

import { useActionState } from 'react';
import { changePasswordAction } from '@/app/actions/auth';
import { idleState } from '@/lib/auth/form-state';
import styles from './auth.module.css';

export function ChangePasswordForm({ minLength }: { minLength: number }) {
  const [state, action, pending] = useActionState(changePasswordAction, idleState);
  const error = (name: string) => state.fieldErrors?.[name] && <span className={styles.fieldError}>{state.fieldErrors[name]}</span>;
  return (
    <form action={action} className={styles.form} aria-label="Change password">
      <label className={styles.label}>
        Current password
        <input className={styles.input} name="currentPassword" type="password" autoComplete="current-password" required />
        {error('currentPassword')}
      </label>
      <label className={styles.label}>
        New password (at least {minLength} characters)
        <input className={styles.input} name="newPassword" type="password" autoComplete="new-password" required minLength={minLength} maxLength={256} />
        {error('newPassword')}
      </label>
      <label className={styles.label}>
        New password again
        <input className={styles.input} name="confirmPassword" type="password" autoComplete="new-password" required />
        {error('confirmPassword')}
      </label>
      <button type="submit" className={styles.button} disabled={pending}>
        {pending ? 'Saving…' : 'Change password'}
      </button>
      {state.status === 'error' && !state.fieldErrors && (
        <p className={styles.error} role="alert">
          {state.message}
        </p>
      )}
    </form>
  );
}
