import { z } from 'zod';
import { wholeNumber } from '@/lib/shared/strict';
import { storable } from '@/lib/shared/text';

/**
 * Input of the lease API and of fenced writes. Resources and owners are free text chosen by the callers (an intent
 * id, a repository URL, a worker's name), limited to what Postgres and Redis store as they are.
 */
const CONTROL = /[\u0000-\u001f\u007f]/;
const name = (max: number) =>
  z
    .string({ error: 'must be a string' })
    .min(1, { error: 'must not be empty' })
    .max(max, { error: `must be at most ${max} characters` })
    .refine((v) => storable(v) && !CONTROL.test(v), { error: 'must not contain control characters or unpaired surrogates' });

export const resourceSchema = name(255);

/**
 * The fences of workers' claims (a claim token fences the writes of its pipeline run, lib/pipeline/run.ts) live
 * under this prefix. No caller may name them, on any door: not in a lease (a grant advances its resource's fence, and
 * would make the intent's next claims look stale), nor in a write's `fencing` field. The workers' own code passes its
 * claim fence beside the input (CommandOptions.fencing), never through it.
 */
export const CLAIM_FENCE_PREFIX = 'worker-claim:';
/** A resource a caller may name: anything but the workers' reserved fences (in any letter case). */
export const leaseResourceSchema = resourceSchema.refine((v) => !v.toLowerCase().startsWith(CLAIM_FENCE_PREFIX), {
  error: `must not start with "${CLAIM_FENCE_PREFIX}" (reserved for the workers' own fences)`,
});
export const ownerSchema = name(255);
/** The longest lease: a holder that needs longer refreshes it. */
export const MAX_TTL_MS = 24 * 60 * 60 * 1000;
export const ttlMsSchema = z
  .number({ error: 'must be a number of milliseconds' })
  .int({ error: 'must be an integer' })
  .min(1, { error: 'must be at least 1' })
  .max(MAX_TTL_MS, { error: `must be at most ${MAX_TTL_MS}` });
export const tokenSchema = z
  .number({ error: 'must be an integer' })
  .int({ error: 'must be an integer' })
  .min(1, { error: 'must be at least 1' })
  .max(Number.MAX_SAFE_INTEGER, { error: `must be at most ${Number.MAX_SAFE_INTEGER}` });

export const acquireBodySchema = z.strictObject({ owner: ownerSchema, ttlMs: ttlMsSchema });
export const refreshBodySchema = z.strictObject({ owner: ownerSchema, token: tokenSchema, ttlMs: ttlMsSchema });
export const releaseBodySchema = z.strictObject({ owner: ownerSchema, token: tokenSchema });

/**
 * `fencing: { resource, token }` on a protected write (status update, correction, pipeline run and retry): the
 * token must be the resource's current grant (the fence refuses anything else, docs/LEASES.md), and the resource
 * one a caller may name.
 */
export const fencingSchema = z.strictObject({ resource: leaseResourceSchema, token: tokenSchema });
export type Fencing = z.infer<typeof fencingSchema>;

export const listLeasesSchema = z.strictObject({
  limit: wholeNumber({ min: 1, max: 500 }).default(100),
  resource: resourceSchema.optional(),
});
