'use client';

import { useActionState } from 'react';
import { signInAction } from '@/app/actions/auth';
import { idleState } from '@/lib/auth/form-result';
import styles from './auth.module.css';

export function SignInForm({ next }: { next: string }) {
  const [state, action, pending] = useActionState(signInAction, idleState);
  return (
    <form action={action} className={styles.form} aria-label="Sign in">
      <input type="hidden" name="next" value={next} />
      <label className={styles.label}>
        Username
        <input className={styles.input} name="username" autoComplete="username" required autoFocus maxLength={64} defaultValue={state.values?.username} />
      </label>
      <label className={styles.label}>
        Password
        <input className={styles.input} name="password" type="password" autoComplete="current-password" required maxLength={256} />
      </label>
      <button type="submit" className={styles.button} disabled={pending}>
        {pending ? 'Signing in…' : 'Sign in'}
      </button>
      {state.status === 'error' && (
        <p className={styles.error} role="alert">
          {state.message}
        </p>
      )}
    </form>
  );
}
