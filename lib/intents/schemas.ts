import { z } from 'zod';
import { fencingSchema } from '@/lib/leases/schemas';
import { wholeNumber } from '@/lib/shared/strict';
import { filterNameSchema, intentIdSchema } from '@/lib/shared/fields';
import { storable, STORABLE_MESSAGE } from '@/lib/shared/text';
import { SERIES_KEYS, type SeriesKey } from '@/lib/contention/series';
import { isInstant } from '@/lib/search/instant';
import { STUCK_DURATION } from '@/lib/search/stuck';
import { INTENT_STATUSES } from '@/lib/shared/intent-states';

/** Zod at every boundary: the API and the server actions validate with these, and so do the domain functions. */
export const statusSchema = z.enum(INTENT_STATUSES, { error: `must be one of ${INTENT_STATUSES.join(', ')}` });
/**
 * What PostgreSQL cannot store: text that is not storable (lib/shared/text.ts), and JSON nested deeper than anyone
 * means to. Refused here as bad input, never as a database error.
 */
const MAX_JSON_DEPTH = 32;

export function unstorableJsonProblem(value: unknown, depth = 0): string | undefined {
  if (depth > MAX_JSON_DEPTH) return `must not be nested deeper than ${MAX_JSON_DEPTH} levels`;
  if (typeof value === 'string') return storable(value) ? undefined : STORABLE_MESSAGE;
  // JSON.parse turns 1e400 into Infinity, which would be stored as null without a word.
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : 'must not contain numbers too large to represent';
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = unstorableJsonProblem(item, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (!storable(key)) return `${STORABLE_MESSAGE} in keys`;
      if (key === '__proto__') return 'must not use the key "__proto__"';
      const problem = unstorableJsonProblem(item, depth + 1);
      if (problem) return problem;
    }
  }
  return undefined;
}

// Checked on the raw value, before the record schema copies it (which would silently drop a "__proto__" key).
const jsonObject = z
  .unknown()
  .superRefine((value, ctx) => {
    const problem = value !== null && typeof value === 'object' && !Array.isArray(value) ? unstorableJsonProblem(value) : undefined;
    if (problem) ctx.addIssue({ code: 'custom', message: problem, abort: true });
  })
  .pipe(z.record(z.string(), z.unknown(), { error: 'must be a JSON object' }));
// Versions are Postgres `integer`s: a larger expectedVersion must be refused here, not overflow in the conflict insert.
const MAX_VERSION = 2_147_483_647;
const versionSchema = z
  .number({ error: 'must be an integer' })
  .int({ error: 'must be an integer' })
  .min(0, { error: 'must be 0 or more' })
  .max(MAX_VERSION, { error: `must be at most ${MAX_VERSION}` });
const idempotencyKeySchema = z
  .string({ error: 'must be a string' })
  .min(1, { error: 'must not be empty' })
  .max(255, { error: 'must be at most 255 characters' })
  .refine(storable, { error: STORABLE_MESSAGE });
const nonEmpty = (max: number) =>
  z
    .string({ error: 'must be a string' })
    .trim()
    .min(1, { error: 'must not be empty' })
    .max(max, { error: `must be at most ${max} characters` })
    .refine(storable, { error: STORABLE_MESSAGE });

export const createIntentSchema = z.strictObject(
  {
    payload: jsonObject,
    source: nonEmpty(255),
    idempotencyKey: idempotencyKeySchema.optional(),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? `unknown field` : 'must be a JSON object') },
);

/** Why an operator changed a status, kept in the audit event (details.reason). Blank is the same as absent. */
export const reasonSchema = z
  .string({ error: 'must be a string' })
  .trim()
  .max(500, { error: 'must be at most 500 characters' })
  .refine(storable, { error: STORABLE_MESSAGE })
  .transform((v) => (v === '' ? undefined : v));

export const updateStatusSchema = z.strictObject({
  status: statusSchema,
  reason: reasonSchema.optional(),
  expectedVersion: versionSchema.optional(),
  idempotencyKey: idempotencyKeySchema.optional(),
  nowait: z.boolean({ error: 'must be true or false' }).optional(),
  /** A write protected by a lease: accepted only with the resource's current grant (409 fencing_token_stale otherwise). */
  fencing: fencingSchema.optional(),
});

export const bulkStatusSchema = z.strictObject({
  ids: z
    .array(intentIdSchema, { error: 'must be an array of intent ids' })
    .min(1, { error: 'must name at least one intent' })
    .max(1000, { error: 'must name at most 1000 intents' }),
  status: statusSchema,
  reason: reasonSchema.optional(),
});

export const reevaluateSchema = z.strictObject({
  diff: jsonObject.refine((d) => Object.keys(d).length > 0, { error: 'must change at least one field' }),
  source: nonEmpty(255),
  reason: nonEmpty(2000),
  metadata: jsonObject.optional(),
  expectedVersion: versionSchema.optional(),
  idempotencyKey: idempotencyKeySchema.optional(),
  fencing: fencingSchema.optional(),
});

const isoInstant = (field: string) =>
  z
    .string({ error: 'must be a string' })
    .trim()
    .max(40, { error: 'must be a date and time' })
    .refine(isInstant, { error: `must be an ISO date and time from 1970 on (${field}=2026-11-01T00:00:00Z)` });

/** The search box's text (lib/search/parse.ts reads it), wherever a list of intents is filtered. */
export const searchTextSchema = z
  .string({ error: 'must be a string' })
  .trim()
  .max(200, { error: 'must be at most 200 characters' })
  .refine(storable, { error: STORABLE_MESSAGE });

/**
 * The filters the list, the counts and bulk-by-filter share, beyond the status and the search: a time range
 * (updated_at), a source, and the intents behind a Contention figure — those that met one of its outcomes
 * (`contention`), optionally in one operation and between two instants (when the outcome happened).
 */
export const rangeFiltersSchema = z.object({
  source: filterNameSchema.optional(),
  from: isoInstant('from').optional(),
  to: isoInstant('to').optional(),
  contention: z.enum(SERIES_KEYS as [SeriesKey, ...SeriesKey[]], { error: `must be one of ${SERIES_KEYS.join(', ')}` }).optional(),
  contentionOperation: z
    .string({ error: 'must be a string' })
    .trim()
    .regex(/^[a-z][a-z_]{0,63}$/, { error: 'must be an operation name such as update_status' })
    .optional(),
  contentionFrom: isoInstant('contentionFrom').optional(),
  contentionTo: isoInstant('contentionTo').optional(),
  /** The stuck view: intents not yet COMPLETED whose last change is older than this (`30m`, `4h`, `2d`). */
  stuck: z
    .string({ error: 'must be a string' })
    .trim()
    .regex(STUCK_DURATION, { error: 'must be a duration such as 30m, 4h or 2d' })
    .optional(),
});

export const listIntentsSchema = z.strictObject({
  status: statusSchema.optional(),
  q: searchTextSchema.optional(),
  limit: wholeNumber({ min: 1, max: 200 }).default(50),
  cursor: z.string().max(500, { error: 'is not a cursor this API issued' }).optional(),
  /** `newest` (the default: latest change first) or `oldest` (the longest unchanged first). */
  order: z.enum(['newest', 'oldest'], { error: 'must be newest or oldest' }).optional(),
  includeReplay: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
  ...rangeFiltersSchema.shape,
});

/** The console's counts per status under a search, a source and a time range (GET /api/console/intents/counts). */
export const countIntentsQuerySchema = z.strictObject({
  q: searchTextSchema.optional(),
  ...rangeFiltersSchema.shape,
});

/** A command's whole input: the body's fields and the intent id from the path (doors parse with these once). */
export const updateStatusInputSchema = updateStatusSchema.extend({ id: intentIdSchema });
export const reevaluateInputSchema = reevaluateSchema.extend({ id: intentIdSchema });

export type CreateIntentInput = z.input<typeof createIntentSchema>;
export type UpdateStatusInput = z.input<typeof updateStatusInputSchema>;
export type BulkStatusInput = z.input<typeof bulkStatusSchema>;
export type ReevaluateInput = z.input<typeof reevaluateInputSchema>;
export type ListIntentsInput = z.input<typeof listIntentsSchema>;
