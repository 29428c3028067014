import { DomainError, ValidationError } from '@/lib/intents/errors';

/**
 * What the auth forms' server actions return (they return results, not throw): expected failures become a
 * message and per-field errors the form shows; unexpected ones are logged and reported generically. `reveal`
 * carries a secret that is shown exactly once (a new API token, a one-time password) — never logged.
 */
export type FormState = {
  status: 'idle' | 'ok' | 'error';
  /** The error's code (e.g. `forbidden`, `invalid_request`) when it failed. */
  code?: string;
  message?: string;
  fieldErrors?: Record<string, string>;
  reveal?: { label: string; value: string };
  /** Non-secret field values to put back: React resets a form after its action, and a failed form should keep them. */
  values?: Record<string, string>;
};

export const idleState: FormState = { status: 'idle' };

export function failure(err: unknown, where: string): FormState {
  if (err instanceof ValidationError) {
    return { status: 'error', code: err.code, message: err.message, fieldErrors: Object.fromEntries(err.issues.map((i) => [i.field, i.message])) };
  }
  if (err instanceof DomainError) return { status: 'error', code: err.code, message: err.message };
  // Only the error itself: form data (passwords) is never passed here.
  console.error(`[auth] ${where} failed unexpectedly:`, err);
  return { status: 'error', code: 'internal_error', message: 'Something went wrong on the server; nothing was changed. Try again, and report it if it persists.' };
}

/** A form field as a string ('' when missing or a file), for handing to Zod-validated domain functions. */
export function field(form: FormData, name: string): string {
  const value = form.get(name);
  return typeof value === 'string' ? value : '';
}
