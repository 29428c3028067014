import { env } from '@/lib/env';
import type { EventStream } from './subjects';

/** This environment's stream and subject prefix (EVENTS_STREAM, EVENTS_SUBJECT_PREFIX; docs/EVENTS.md). */
export function configuredEventStream(): EventStream {
  const e = env();
  return { name: e.EVENTS_STREAM, subjectPrefix: e.EVENTS_SUBJECT_PREFIX };
}
