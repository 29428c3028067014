/**
 * The intent engine's errors: every expected failure is a type with a stable code and the HTTP status the API answers
 * with. They are created from SQLSTATEs and codes (lib/db/sqlstate.ts), never from message text. The base class and
 * the errors every module shares (validation, not found, database under pressure) are in lib/shared/errors.ts.
 */
import { DomainError, type ErrorBody } from '@/lib/shared/errors';

export class InvalidTransitionError extends DomainError {
  readonly code = 'invalid_transition';
  readonly httpStatus = 409;
}

export class VersionConflictError extends DomainError {
  readonly code = 'version_conflict';
  readonly httpStatus = 409;
  constructor(
    readonly intentId: string,
    readonly expectedVersion: number,
    readonly currentVersion: number,
  ) {
    super(
      expectedVersion < currentVersion
        ? `Intent ${intentId} is at version ${currentVersion}, not the expected ${expectedVersion}: someone changed it first. Nothing was applied; reload it, review the changes and try again.`
        : `Intent ${intentId} is at version ${currentVersion}, not the expected ${expectedVersion}: that version does not exist yet, so the expectation cannot be met. Nothing was applied; read the intent again for its current version.`,
      { intentId, expectedVersion, currentVersion },
    );
  }
}

/** A backend holding a lock someone waited for: what the Locks page would show of it. */
export type LockHolder = {
  pid: number;
  applicationName: string | null;
  state: string | null;
  transactionStartedAt: string | null;
  /** How long its transaction had been open when the wait ran out (null when unknown). */
  transactionAgeMs: number | null;
  query: string | null;
};

export class LockTimeoutError extends DomainError {
  readonly code = 'lock_timeout';
  readonly httpStatus = 423;
  /** `refusedWithoutWaiting`: the row was held and enough commands already waited for it (docs/LOCKING.md). */
  constructor(message: string, details?: { intentIds: string[]; nowait: boolean; lockTimeoutMs?: number; refusedWithoutWaiting?: boolean; holders?: LockHolder[] }) {
    super(message, details);
  }
}

export class DeadlockError extends DomainError {
  readonly code = 'deadlock';
  readonly httpStatus = 503;
}

export class RetriesExhaustedError extends DomainError {
  readonly code = 'retries_exhausted';
  readonly httpStatus = 503;
}

export class IdempotencyKeyReusedError extends DomainError {
  readonly code = 'idempotency_key_reused';
  readonly httpStatus = 422;
  constructor(key: string) {
    super(`Idempotency key "${key}" was already used with a different request body; use a new key for a different request.`, { idempotencyKey: key });
  }
}

export class IdempotencyInProgressError extends DomainError {
  readonly code = 'idempotency_in_progress';
  readonly httpStatus = 409;
  constructor(key: string) {
    super(`A request with idempotency key "${key}" is still being processed; retry shortly to get its result.`, { idempotencyKey: key });
  }
}

/** How the API marks an answer replayed from the first request with the same idempotency key. */
export const REPLAYED_HEADERS = { 'Idempotent-Replayed': 'true' } as const;

/** A stored refusal replayed from an idempotency record: same code, status and body as the first answer. */
export class ReplayedError extends DomainError {
  readonly code: string;
  readonly httpStatus: number;
  readonly headers = REPLAYED_HEADERS;
  constructor(body: ErrorBody, httpStatus: number) {
    super(body.message, body.details);
    this.code = body.code;
    this.httpStatus = httpStatus;
  }
}

export class OperationCancelledError extends DomainError {
  readonly code = 'cancelled';
  readonly httpStatus = 503;
}
