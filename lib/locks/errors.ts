import { DomainError } from '@/lib/shared/errors';

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
