/**
 * The NATS subjects Bridge Console publishes, in the JetStream stream `BRIDGE_EVENTS` (docs/EVENTS.md). Intent
 * events are keyed by the intent (published in version order per intent); lock events by the lock's resource.
 */
export const EVENT_STREAM = 'BRIDGE_EVENTS';
export const STREAM_SUBJECTS = ['evt.intent.>', 'evt.lock.>'];

export const SUBJECTS = {
  intentCreated: 'evt.intent.created',
  statusChanged: 'evt.intent.status_changed',
  corrected: 'evt.intent.corrected',
  conflict: 'evt.intent.conflict',
  pipelineFinished: 'evt.intent.pipeline_finished',
  lockAcquired: 'evt.lock.acquired',
  lockDenied: 'evt.lock.denied',
  lockReleased: 'evt.lock.released',
  lockExpired: 'evt.lock.expired',
} as const;

export type Subject = (typeof SUBJECTS)[keyof typeof SUBJECTS];
export const ALL_SUBJECTS = Object.values(SUBJECTS) as Subject[];

/** Other writers wake the relays with this after committing (a wake-up call only: the relays also poll). */
export const OUTBOX_CHANNEL = 'bridge_outbox';
