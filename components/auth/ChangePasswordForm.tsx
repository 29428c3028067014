'use client';

import { startTransition, useActionState, useEffect, useRef, type FormEvent } from 'react';
import { changePasswordAction } from '@/app/actions/auth';
import { idleState } from '@/lib/auth/form-result';
import styles from './auth.module.css';

/**
 * Own password. Submitted by hand so a refusal keeps what was typed: a new password that is too short or does not
 * match can be corrected in place. The one exception is a wrong current password: that field is emptied and
 * focused, because resubmitting the same wrong (masked) text is the likely next mistake.
 *
 * The form is still bound to the action (`action=`): a submit before the page's code has loaded posts to the
 * server action as a plain form would, instead of the browser's default of a GET that would put both passwords in
 * the address bar, the history and the server's logs. Once hydrated, the handler below prevents that default and
 * React does not run the action a second time.
 */
export function ChangePasswordForm({ minLength }: { minLength: number }) {
  const [state, action, pending] = useActionState(changePasswordAction, idleState);
  const currentRef = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (state.fieldErrors?.currentPassword && currentRef.current) {
      currentRef.current.value = '';
      currentRef.current.focus();
    }
  }, [state]);
  const invalid = (name: string) => (state.fieldErrors?.[name] ? true : undefined);
  const error = (name: string) =>
    state.fieldErrors?.[name] && (
      <span id={`${name}-error`} className={styles.fieldError} role="alert">
        {state.fieldErrors[name]}
      </span>
    );
  const describedBy = (name: string, hint?: string) => [hint, state.fieldErrors?.[name] ? `${name}-error` : undefined].filter(Boolean).join(' ') || undefined;
  const submitByHand = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    startTransition(() => action(data));
  };
  return (
    <form className={styles.form} aria-label="Change password" action={action} onSubmit={submitByHand}>
      <label className={styles.label}>
        Current password
        <input
          ref={currentRef}
          className={styles.input}
          name="currentPassword"
          type="password"
          autoComplete="current-password"
          required
          aria-invalid={invalid('currentPassword')}
          aria-describedby={describedBy('currentPassword')}
        />
        {error('currentPassword')}
      </label>
      <label className={styles.label}>
        New password (at least {minLength} characters)
        <input
          className={styles.input}
          name="newPassword"
          type="password"
          autoComplete="new-password"
          required
          minLength={minLength}
          maxLength={256}
          aria-invalid={invalid('newPassword')}
          aria-describedby={describedBy('newPassword')}
        />
        {error('newPassword')}
      </label>
      <label className={styles.label}>
        New password again
        <input
          className={styles.input}
          name="confirmPassword"
          type="password"
          autoComplete="new-password"
          required
          aria-invalid={invalid('confirmPassword')}
          aria-describedby={describedBy('confirmPassword')}
        />
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
