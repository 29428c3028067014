import { DomainError } from '@/lib/shared/errors';

/** Someone else holds the lease (409 `lease_denied`); `details` say who and until when. */
export class LeaseDeniedError extends DomainError {
  readonly code = 'lease_denied';
  readonly httpStatus = 409;
  constructor(resource: string, owner: string, expiresAt: string) {
    super(`The lease on ${resource} is held by ${owner} until ${expiresAt}; try again after that, or ask them to release it.`, { resource, owner, expiresAt });
  }
}

/** A refresh or release by someone who does not hold the lease (any more): a stale token, another owner, or expiry. */
export class LeaseNotHeldError extends DomainError {
  readonly code = 'lease_not_held';
  readonly httpStatus = 409;
  constructor(resource: string, owner: string, token: number) {
    super(
      `${owner} does not hold the lease on ${resource} with token ${token}: it expired, was released, or another holder has it now. Acquire it again before writing.`,
      { resource, owner, token },
    );
  }
}

/**
 * A write carried a fencing token that is not its resource's current grant: lower (its writer's lease passed to
 * someone else since) or never handed out at all. Nothing was applied, and the fence did not move.
 */
export class FencingTokenStaleError extends DomainError {
  readonly code = 'fencing_token_stale';
  readonly httpStatus = 409;
  constructor(resource: string, token: number, highestAccepted: number | null) {
    super(
      highestAccepted !== null && token < highestAccepted
        ? `Fencing token ${token} for ${resource} is stale: token ${highestAccepted} has been granted since. Your lease ran out and someone else holds or held a newer one; nothing was applied. Acquire the lease again and re-read before writing.`
        : `Fencing token ${token} for ${resource} is not the resource's current grant${highestAccepted !== null && token > highestAccepted ? ` (${highestAccepted})` : ''}: a write may only carry the token its lease acquire answered, until a newer one is granted. Nothing was applied.`,
      { resource, token, highestAccepted },
    );
  }
}

/**
 * A refresh or release of a lease that another caller took (another user, or another API token), or an edit lease
 * named after someone else: a lease belongs to the credential that acquired it (docs/LEASES.md, "Who may do what").
 */
export class LeaseNotYoursError extends DomainError {
  readonly code = 'lease_not_yours';
  readonly httpStatus = 403;
  constructor(message: string, details: { resource: string; owner: string }) {
    super(message, details);
  }
}

/**
 * The Redis backend was configured but cannot be reached, or went away during the call: 503 with Retry-After. A
 * grant lost with the connection is never used by anyone (its holder did not hear of it) and runs out by its TTL.
 */
export class LeaseBackendUnavailableError extends DomainError {
  readonly code = 'lease_backend_unavailable';
  readonly httpStatus = 503;
  readonly headers = { 'Retry-After': '1' };
  constructor() {
    super(
      'The lease backend (Redis) is unavailable; nothing was granted, refreshed or released that you can rely on. Try again shortly.',
    );
  }
}
