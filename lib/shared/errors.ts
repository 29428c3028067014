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
