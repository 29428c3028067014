'use client';

import { createContext, startTransition, useActionState, useContext, useEffect, useRef, useState, type ReactNode } from 'react';
import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import { idleState, type FormState } from '@/lib/auth/form-result';
import { Reveal } from './Reveal';
import styles from './auth.module.css';

/** What to ask before a destructive action, in the console's own dialog: say exactly what will happen. */
export type ConfirmSpec = { title: string; body: ReactNode; confirmLabel: string };

const FormStateContext = createContext<FormState>(idleState);

/** A field's refusal, placed beside the field by the page (names listed in the form's `fieldLabels`). */
export function FieldError({ name, id }: { name: string; id?: string }) {
  const message = useContext(FormStateContext).fieldErrors?.[name];
  if (!message) return null;
  return (
    <span id={id} className={styles.fieldError} role="alert">
      {message}
    </span>
  );
}

/**
 * A form bound to a server action that returns a FormState: shows its message, field errors and any secret to
 * reveal once. Fields are passed as children so pages stay server components.
 *
 * - `onRefusal="keep"` (new things: a user, a token) keeps what was typed when the server refuses;
 *   `"restore"` (edits of saved values: roles) puts the saved values back, so the form never shows something that
 *   was not saved, and the refusal stays visible.
 * - `confirm` asks first in the console's ConfirmDialog (focus kept inside, Escape cancels).
 * - `fieldLabels` names the fields whose errors the page shows beside them with `<FieldError>`; errors for other
 *   fields are listed under the form with their label.
 */
type ActionFormProps = {
  action: (prev: FormState, form: FormData) => Promise<FormState>;
  submitLabel: string;
  children?: ReactNode;
  variant?: 'button' | 'secondary' | 'danger';
  inline?: boolean;
  confirm?: ConfirmSpec;
  onRefusal?: 'keep' | 'restore';
  fieldLabels?: Record<string, string>;
  testId?: string;
  ariaLabel?: string;
};

export function ActionForm({ action, submitLabel, children, variant = 'button', inline = false, confirm, onRefusal = 'keep', fieldLabels = {}, testId, ariaLabel }: ActionFormProps) {
  const [state, formAction, pending] = useActionState(action, idleState);
  const formRef = useRef<HTMLFormElement>(null);
  const [asking, setAsking] = useState<FormData | null>(null);
  // The dialog stays open (showing "Working…") until the action has answered; then it closes and focus goes back
  // to the button that opened it. Adjusted during render, as React recommends for state that follows other state.
  const [answered, setAnswered] = useState(state);
  if (answered !== state) {
    setAnswered(state);
    setAsking(null);
  }
  // Submitted by hand rather than through `action=`, because React resets an action form afterwards and a
  // refused form should keep what was typed; a stand-alone form is cleared only once it succeeded.
  useEffect(() => {
    if (state.status === 'ok' && !inline) formRef.current?.reset();
    // reset() returns every field to its default, which the server rendered from the saved values.
    if (state.status === 'error' && onRefusal === 'restore') formRef.current?.reset();
  }, [state, inline, onRefusal]);

  const submit = (data: FormData) => startTransition(() => formAction(data));
  return (
    <FormStateContext.Provider value={state}>
      <form
        ref={formRef}
        className={inline ? styles.inline : styles.form}
        data-testid={testId}
        aria-label={ariaLabel}
        // Bound to the action too, so a submit before the page's code has loaded posts to it (what the fields
        // hold never lands in the address bar as the browser's default GET would put it). A form that asks first
        // has no action before hydration: a POST to the page itself changes nothing, and its question needs the code.
        action={confirm ? undefined : formAction}
        method={confirm ? 'post' : undefined}
        onSubmit={(event) => {
          event.preventDefault();
          const data = new FormData(event.currentTarget);
          if (confirm) setAsking(data);
          else submit(data);
        }}
      >
        {children}
        <button type="submit" className={styles[variant]} disabled={pending}>
          {pending ? 'Working…' : submitLabel}
        </button>
        <FormOutcome state={state} fieldLabels={fieldLabels} />
      </form>
      {confirm && (
        <ConfirmDialog
          open={asking !== null}
          title={confirm.title}
          confirmLabel={confirm.confirmLabel}
          pending={pending}
          onCancel={() => setAsking(null)}
          onConfirm={() => asking && submit(asking)}
        >
          {confirm.body}
        </ConfirmDialog>
      )}
    </FormStateContext.Provider>
  );
}

/** What the action answered: errors of fields the page does not show beside them, the refusal, the success, a secret to copy once. */
function FormOutcome({ state, fieldLabels }: { state: FormState; fieldLabels: Record<string, string> }) {
  const otherFieldErrors = Object.entries(state.fieldErrors ?? {}).filter(([name]) => !(name in fieldLabels));
  return (
    <>
      {otherFieldErrors.map(([name, message]) => (
        <span key={name} className={styles.fieldError} role="alert">
          {name}: {message}
        </span>
      ))}
      {state.status === 'error' && !state.fieldErrors && (
        <p className={styles.error} role="alert">
          {state.message}
        </p>
      )}
      {state.status === 'ok' && state.message && (
        <p className={styles.ok} role="status">
          {state.message}
        </p>
      )}
      {state.reveal && <Reveal label={state.reveal.label} value={state.reveal.value} />}
    </>
  );
}
