import { z } from 'zod';
import { readDb } from '@/lib/db/read';
import { DomainError, NotFoundError } from '@/lib/shared/errors';
import { parseInput } from '@/lib/shared/validation';
import { isUuid, UUID_PREFIX, uuidPrefixRange } from './parse';

/**
 * An intent named by the API's read paths (`GET /api/intents/:id`, its audit and pipeline runs): a whole id, or
 * the first characters the console shows of one (8 or more, as in `git show 3f2a9c1b`). A prefix resolves when
 * exactly one intent starts so, by one primary-key range read of at most a few rows, whatever the table's size.
 * Commands keep wanting the whole id: a change names exactly what it changes.
 */
export const intentRefSchema = z
  .string({ error: 'must be a string' })
  .trim()
  // A pattern, not a refinement, so the OpenAPI document states the rule too (and tools generating ids from it
  // produce ones the API takes).
  .regex(UUID_PREFIX, { error: 'must be a UUID or its first 8 or more characters, as the console shows them' });

/** How many candidates an ambiguous prefix lists. */
const CANDIDATES_SHOWN = 5;

export class AmbiguousIdError extends DomainError {
  readonly code = 'ambiguous_id';
  readonly httpStatus = 400;
  constructor(prefix: string, candidates: string[], field = 'id') {
    const more = candidates.length > CANDIDATES_SHOWN;
    super(`Several intents have ids starting with ${prefix}: give more of the id (or the whole of it).`, {
      fields: [{ field, message: 'matches several intents' }],
      candidates: candidates.slice(0, CANDIDATES_SHOWN),
      more,
    });
  }
}

/**
 * The whole id `ref` names; NotFoundError when none does, AmbiguousIdError when several do. `field` is the input's
 * name in the refusal: `id` in a path, `intent` or `intentId` where a list is filtered by an intent.
 */
export async function resolveIntentId(ref: unknown, field = 'id'): Promise<string> {
  const given = parseInput(intentRefSchema, ref, field);
  if (isUuid(given)) return given;
  const text = given.toLowerCase();
  const { low, high } = uuidPrefixRange(text);
  const rows = await (await readDb()).$queryRaw<{ id: string }[]>`
    SELECT id::text AS id FROM intents WHERE id BETWEEN ${low}::uuid AND ${high}::uuid ORDER BY id LIMIT ${CANDIDATES_SHOWN + 1}`;
  if (rows.length === 0) throw new NotFoundError(`Intent ${text}…`, { id: text });
  if (rows.length > 1) throw new AmbiguousIdError(text, rows.map((r) => r.id), field);
  return rows[0].id;
}

/**
 * An intent filter of a list (`field`: `intent`, `intentId`): the whole id it names. A prefix that several intents
 * share is refused (400 naming the field); one that no intent starts with filters to nothing, as a whole id no intent
 * has does: it answers the first id of its empty range, which no intent has.
 */
export async function resolveIntentFilter(ref: string, field: string): Promise<string> {
  try {
    return await resolveIntentId(ref, field);
  } catch (err) {
    if (err instanceof NotFoundError) return uuidPrefixRange(ref.trim().toLowerCase()).low;
    throw err;
  }
}
