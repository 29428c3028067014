import { formatUtc } from '@/lib/shared/time';
import { DomainError } from '@/lib/shared/errors';

/** The replay's refusals, with the status codes the doors answer with. */
export class ReplayDisabledError extends DomainError {
  readonly code = 'replay_disabled';
  readonly httpStatus = 403;
  constructor(environment: string) {
    super(
      `The contention replay is disabled in ${environment}: it creates intents and drives lock contention on purpose. Run it on staging or development.`,
      { environment },
    );
  }
}

export class ReplayInProgressError extends DomainError {
  readonly code = 'replay_in_progress';
  readonly httpStatus = 409;
  constructor(running: { id: string; requestedBy: string; createdAt: string; door: string } | null) {
    super(
      running
        ? `A replay run is already in progress: run ${running.id.slice(0, 8)}, started by ${running.requestedBy} from the ${running.door === 'api' ? 'API' : running.door} at ${formatUtc(running.createdAt)}. One run at a time keeps the figures honest: wait for it, or cancel it.`
        : 'A replay run is already in progress; one run at a time keeps the measurements honest.',
      running ? { runId: running.id, requestedBy: running.requestedBy, createdAt: running.createdAt } : undefined,
    );
  }
}

export class ReplayNotRunningError extends DomainError {
  readonly code = 'replay_not_running';
  readonly httpStatus = 409;
}

/** Thrown inside a run when someone asked to cancel it; the runner records the run as cancelled. */
export class ReplayCancelledError extends Error {
  constructor(readonly by: string | null) {
    super(by ? `cancelled by ${by}` : 'cancelled');
  }
}

/** Only a run that ran to the end can be a baseline: a cancelled, broken or running one has no figures to compare with. */
export class ReplayNotFinishedError extends DomainError {
  readonly code = 'replay_not_finished';
  readonly httpStatus = 409;
}
