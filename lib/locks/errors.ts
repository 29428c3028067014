import { DomainError } from '@/lib/intents/errors';

/**
 * The Locks page's own queries gave up (lock or statement timeout, or no pooled connection in time): the database
 * is struggling, so the page backs off instead of piling on. 503 with Retry-After.
 */
export class DatabaseUnderPressureError extends DomainError {
  readonly code = 'db_under_pressure';
  readonly httpStatus = 503;
  readonly headers: Record<string, string>;
  constructor(
    readonly reason: 'lock_timeout' | 'statement_timeout' | 'pool_busy',
    retryAfterSeconds = 10,
  ) {
    super(
      reason === 'pool_busy'
        ? 'No database connection was free in time: the database is under pressure, so this view is backing off.'
        : `The lock snapshot hit its ${reason === 'lock_timeout' ? 'lock timeout' : 'statement timeout'}: the database is under pressure, so this view is backing off.`,
      { reason, retryAfterSeconds },
    );
    this.headers = { 'Retry-After': String(retryAfterSeconds) };
  }
}

/** Cancel first, terminate only after: a terminate that did not follow a cancel of the same backend. */
export class CancelFirstError extends DomainError {
  readonly code = 'cancel_first';
  readonly httpStatus = 409;
}

/** Terminate is for a backend that still blocks others after a cancel; this one no longer does. */
export class NotBlockingError extends DomainError {
  readonly code = 'not_blocking';
  readonly httpStatus = 409;
}

/** Only client backends of this database may be signalled (never autovacuum, WAL senders or the console's own query). */
export class NotSignallableError extends DomainError {
  readonly code = 'not_signallable';
  readonly httpStatus = 409;
}
