import { DomainError } from '@/lib/shared/errors';

/** A bridge's own refusal (a payload it cannot take, say): recorded as the step's error. */
export class BridgeError extends DomainError {
  readonly code = 'bridge_failed';
  readonly httpStatus = 422;
}

/**
 * A bridge's refusal that no later attempt can change (a person rejected the intent, say): it fails the intent at
 * once, even when a worker's attempt has attempts left.
 */
export class FinalBridgeError extends BridgeError {
  readonly failsIntent = true;
}

export class UnknownBridgeError extends DomainError {
  readonly code = 'unknown_bridge';
  readonly httpStatus = 400;
}

/**
 * A worker's claim is no longer its own (rescued after its lease ran out, or released): the database refused a
 * write conditional on the claim token, and the run stops without writing anything else.
 */
export class LostClaimError extends DomainError {
  readonly code = 'lost_claim';
  readonly httpStatus = 409;
}

/**
 * A rerun from a step that cannot be planned on this intent: a step before the chosen bridge was not finished by the
 * latest run (nothing recorded to reuse), or the chosen bridge's starting status is not known. Nothing changed.
 */
export class RerunRefusedError extends DomainError {
  readonly code = 'rerun_refused';
  readonly httpStatus = 409;
}
