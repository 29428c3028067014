import { asDomainError } from './respond';
import { ValidationError } from '@/lib/shared/errors';
import type { FormState } from '@/lib/auth/form-result';

export { idleState, type FormState } from '@/lib/auth/form-result';

export function failure(err: unknown, where: string): FormState {
  if (err instanceof ValidationError) {
    return { status: 'error', code: err.code, message: err.message, fieldErrors: Object.fromEntries(err.issues.map((i) => [i.field, i.message])) };
  }
  const known = asDomainError(err);
  if (known) return { status: 'error', code: known.code, message: known.message };
  // Only the error itself: form data (passwords) is never passed here.
  console.error(`[auth] ${where} failed unexpectedly:`, err);
  return { status: 'error', code: 'internal_error', message: 'Something went wrong on the server; nothing was changed. Try again, and report it if it persists.' };
}

/**
 * A form field as a string ('' when missing or a file), for handing to Zod-validated domain functions. A server
 * action can be called with any serialisable arguments, not only the form its page sends: anything that is not
 * FormData reads as an empty form, which the domain then refuses field by field.
 */
export function field(form: unknown, name: string): string {
  const value = form instanceof FormData ? form.get(name) : null;
  return typeof value === 'string' ? value : '';
}

/** All values of a repeated form field (e.g. checkboxes), strings only; none when `form` is not FormData. */
export function fieldList(form: unknown, name: string): string[] {
  return form instanceof FormData ? form.getAll(name).filter((v): v is string => typeof v === 'string') : [];
}
