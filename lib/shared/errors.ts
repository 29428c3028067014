/**
 * The base of every typed error a door can answer with: a stable `code`, the HTTP status, a message a person can act
 * on, and optional structured details. Each area (intents, auth, locks, replay, …) derives its own errors from it;
 * the doors turn any of them into the API envelope or an action result without knowing the area.
 */
export type ErrorBody = { code: string; message: string; details?: unknown };

export abstract class DomainError extends Error {
  abstract readonly code: string;
  abstract readonly httpStatus: number;
  readonly details?: unknown;

  constructor(message: string, details?: unknown) {
    super(message);
    this.name = new.target.name;
    this.details = details;
  }

  toBody(): ErrorBody {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

export type FieldIssue = { field: string; message: string };

export class ValidationError extends DomainError {
  readonly code = 'invalid_request';
  readonly httpStatus = 400;
  constructor(readonly issues: FieldIssue[]) {
    super(
      // One shape whatever the count: "Invalid request: status is required; expectedVersion must be …".
      `Invalid request: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}.`,
      { fields: issues },
    );
  }
}

/** Something named by the request (an intent, a user, a token, a run …) does not exist. */
export class NotFoundError extends DomainError {
  readonly code = 'not_found';
  readonly httpStatus = 404;
  /** `what` names it ("Intent 2c4d…"); several at once take "were" ("3 intents were not found"). */
  constructor(what: string, details?: unknown, several = false) {
    super(`${what} ${several ? 'were' : 'was'} not found`, details);
  }
}

/** Why the database did not answer in time (lib/db/sqlstate.ts pressureReason reads it from an error). */
export type PressureReason = 'lock_timeout' | 'statement_timeout' | 'pool_busy' | 'lock_waiters';

/** The Retry-After of the console's polling views (Locks, Contention) when the database is under pressure. */
export const VIEW_RETRY_AFTER_SECONDS = 10;

/**
 * The database did not answer in time — a lock or statement timeout, or no pooled connection free in time (or a
 * transaction past its time limit): load, not the request, and not a bug. What the request was doing was rolled
 * back, so nothing of it was applied. 503 with Retry-After: a single request is asked to wait a moment, the
 * console's polling views (Locks, Contention) back off for longer so as not to pile on.
 */
export class DatabaseUnderPressureError extends DomainError {
  readonly code = 'db_under_pressure';
  readonly httpStatus = 503;
  readonly headers: Record<string, string>;
  constructor(
    readonly reason: PressureReason,
    retryAfterSeconds = 2,
  ) {
    super(
      `${
        reason === 'pool_busy'
          ? 'No database connection was free in time for this request, or it ran past its time limit'
          : reason === 'lock_waiters'
            ? "The row this request needs is locked, and as many of this console's database connections as may wait on row locks already do"
            : `The database did not answer within this request's ${reason === 'lock_timeout' ? 'lock timeout' : 'statement timeout'}`
      }: the database is under pressure. Nothing was applied; try again in ${retryAfterSeconds} s.`,
      { reason, retryAfterSeconds },
    );
    this.headers = { 'Retry-After': String(retryAfterSeconds) };
  }
}
