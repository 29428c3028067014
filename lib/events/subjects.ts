/**
 * The events Bridge Console publishes (docs/EVENTS.md), by type: the payload's `type`, and the NATS subject when no
 * subject prefix is configured. Intent events are keyed by the intent (published in version order per intent); lock
 * events by the lock's resource.
 */
/** The stream's name unless EVENTS_STREAM says otherwise. */
export const EVENT_STREAM = 'BRIDGE_EVENTS';
/** The subjects a stream holds, before the environment's prefix. */
export const STREAM_SUBJECTS = ['evt.intent.>', 'evt.lock.>'];

/**
 * Where one environment's events go: the stream, and the prefix of its subjects. Environments sharing a NATS server
 * need a pair each: JetStream refuses a second stream over subjects another stream already holds.
 */
export type EventStream = { name: string; subjectPrefix: string };
export const DEFAULT_EVENT_STREAM: EventStream = { name: EVENT_STREAM, subjectPrefix: '' };

/** The NATS subject of an event type (or of a subject pattern) in this stream. */
export function natsSubject(stream: EventStream, type: string): string {
  return stream.subjectPrefix ? `${stream.subjectPrefix}.${type}` : type;
}

/** The subjects the stream is created with. */
export function streamSubjects(stream: EventStream): string[] {
  return STREAM_SUBJECTS.map((s) => natsSubject(stream, s));
}

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
