'use client';

import { startTransition, useActionState, useEffect, useRef, type ReactNode } from 'react';
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
  const formRef = useRef<HTMLFormElement>(null);
  // Submitted by hand rather than through `action=`, because React resets an action form afterwards and a
  // refused form should keep what was typed; a stand-alone form is cleared only once it succeeded.
  useEffect(() => {
    if (state.status === 'ok' && !inline) formRef.current?.reset();
  }, [state, inline]);
  return (
    <form
      ref={formRef}
      className={inline ? styles.inline : styles.form}
      data-testid={testId}
      onSubmit={(event) => {
        event.preventDefault();
        if (confirm && !window.confirm(confirm)) return;
        const data = new FormData(event.currentTarget);
        startTransition(() => formAction(data));
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
