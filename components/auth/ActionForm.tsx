'use client';

import { useActionState, type ReactNode } from 'react';
import { idleState, type FormState } from '@/lib/auth/form-state';
import { Reveal } from './Reveal';
import styles from './auth.module.css';

/**
 * A form bound to a server action that returns a FormState: shows its message, field errors and any secret to
 * reveal once. Fields are passed as children so pages stay server components.
 */
export function ActionForm({
  action,
  submitLabel,
  children,
  variant = 'button',
  inline = false,
  confirm,
  testId,
}: {
  action: (prev: FormState, form: FormData) => Promise<FormState>;
  submitLabel: string;
  children?: ReactNode;
  variant?: 'button' | 'secondary' | 'danger';
  inline?: boolean;
  confirm?: string;
  testId?: string;
}) {
  const [state, formAction, pending] = useActionState(action, idleState);
  return (
    <form
      action={formAction}
      className={inline ? styles.inline : styles.form}
      data-testid={testId}
      onSubmit={(event) => {
        if (confirm && !window.confirm(confirm)) event.preventDefault();
      }}
    >
      {children}
      {state.fieldErrors &&
        Object.entries(state.fieldErrors).map(([name, message]) => (
          <span key={name} className={styles.fieldError}>
            {name}: {message}
          </span>
        ))}
      <button type="submit" className={styles[variant]} disabled={pending}>
        {pending ? 'Working…' : submitLabel}
      </button>
      {state.status === 'error' && !state.fieldErrors && (
        <p className={styles.error} role="alert">
          {state.message}
        </p>
      )}
      {state.status === 'ok' && state.message && <p className={styles.ok}>{state.message}</p>}
      {state.reveal && <Reveal label={state.reveal.label} value={state.reveal.value} />}
    </form>
  );
}
