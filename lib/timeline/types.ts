import { z } from 'zod';
import { wholeNumber } from '@/lib/shared/strict';

/**
 * The intent timeline's wire shapes (GET /api/intents/:id/timeline, the intent page): one list of entries, oldest
 * first, each with when, what kind, a one-line summary, who, where it lives in the console, and the kind's own
 * fields in `details`. Shared by the server, the OpenAPI document and the browser.
 */
export const TIMELINE_KINDS = [
  'created',
  'status_change',
  'correction',
  'conflict',
  'idempotent_repeat',
  'pipeline_run',
  'pipeline_step',
  'lease',
  'fenced_write',
  'event_out',
  'lock_wait',
  'lock_timeout',
  'lock_episode',
  'unblock',
  'other',
] as const;
export type TimelineKind = (typeof TIMELINE_KINDS)[number];

/** How the intent page's filter names each kind. */
export const TIMELINE_KIND_LABELS: Record<TimelineKind, string> = {
  created: 'Created',
  status_change: 'Status changes',
  correction: 'Corrections',
  conflict: 'Conflicts',
  idempotent_repeat: 'Idempotent repeats',
  pipeline_run: 'Pipeline runs',
  pipeline_step: 'Pipeline steps',
  lease: 'Leases',
  fenced_write: 'Fenced writes',
  event_out: 'Events sent',
  lock_wait: 'Lock waits',
  lock_timeout: 'Lock timeouts',
  lock_episode: 'Blocking episodes',
  unblock: 'Unblocks',
  other: 'Other',
};

/** How one entry of each kind is named on the intent page. */
export const TIMELINE_KIND_NAMES: Record<TimelineKind, string> = {
  created: 'Created',
  status_change: 'Status',
  correction: 'Correction',
  conflict: 'Conflict',
  idempotent_repeat: 'Repeat',
  pipeline_run: 'Pipeline',
  pipeline_step: 'Step',
  lease: 'Lease',
  fenced_write: 'Fenced write',
  event_out: 'Event sent',
  lock_wait: 'Lock wait',
  lock_timeout: 'Lock timeout',
  lock_episode: 'Blocking',
  unblock: 'Unblock',
  other: 'Other',
};

export const timelineEntrySchema = z
  .object({
    at: z.iso.datetime().meta({ description: 'When it happened: the writing transaction’s time (ISO 8601, UTC).' }),
    kind: z.enum(TIMELINE_KINDS),
    position: z.string().meta({
      description:
        'Where the entry stands in the order: `w<n>` for rows written since the timeline existed (one database sequence drawn by every row as it is written, so entries of one transaction keep their write order), `t<ms>` for older rows and sources ordered by time only.',
      example: 'w1042',
    }),
    summary: z.string().meta({ description: 'One line a person reads.', example: 'PROCESSED → COMPLETED' }),
    actor: z.string().nullable().meta({ description: 'Who did it (console user or API token owner), when known.' }),
    link: z.string().meta({ description: 'Where it lives in the console (a path).', example: '/audit?intent=3f2a…' }),
    details: z.looseObject({}).meta({ description: 'The kind’s own fields (statuses and versions, reason, lock wait in ms, holder pid, stream sequence, …).' }),
  })
  .meta({ id: 'TimelineEntry' });
export type TimelineEntry = z.infer<typeof timelineEntrySchema>;

export const timelinePageSchema = z
  .object({
    items: z.array(timelineEntrySchema),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the entries after these; null at the end.' }),
  })
  .meta({ id: 'Timeline' });
export type TimelinePage = z.infer<typeof timelinePageSchema>;

export const TIMELINE_DEFAULT_LIMIT = 200;
export const TIMELINE_MAX_LIMIT = 500;

export const timelineQuerySchema = z.strictObject({
  limit: wholeNumber({ min: 1, max: TIMELINE_MAX_LIMIT })
    .default(TIMELINE_DEFAULT_LIMIT)
    .meta({ description: `Entries per page (1–${TIMELINE_MAX_LIMIT}, default ${TIMELINE_DEFAULT_LIMIT}).` }),
  cursor: z
    .string()
    .max(2000, { error: 'is too long' })
    .regex(/^[A-Za-z0-9_-]+$/, { error: 'is not a timeline cursor' })
    .optional()
    .meta({ description: 'The `nextCursor` of the page before.' }),
});
export type TimelineQuery = z.input<typeof timelineQuerySchema>;
