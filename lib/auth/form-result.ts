// What the auth forms' client components import: no server code behind it (form-state.ts, which builds these from
// errors, reaches the database through the error mapping and must stay out of the browser bundle).

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
