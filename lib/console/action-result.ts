/**
 * What the console's server actions return (they never throw at the page): the data, or the error in the same
 * shape as the JSON API's envelope (`code`, `message`, `details`), so pages show the same messages either way.
 */
export type ActionError = { code: string; message: string; details?: unknown };
export type ActionResult<T> = { ok: true; data: T } | { ok: false; error: ActionError };
