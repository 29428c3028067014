import { Prisma } from '@/generated/prisma/client';
import { db, type Tx } from '@/lib/db/client';
import { sqlState } from '@/lib/db/sqlstate';
import { FencingTokenStaleError } from './errors';
import type { Fencing } from './schemas';
import { tokenNumber } from './token';

/**
 * Fenced writes. The rule lives in SQL, once (bridge_fence_accept / bridge_fence_check, migration
 * 20261210090000_fence_grants_and_lease_callers): a write carrying `fencing: { resource, token }` is accepted only
 * with the token its resource's fence holds — the newest grant; only grants move a fence — and the check runs inside
 * the statement that applies the write, so no gap exists between "accepted" and "written". This module gives writers
 * the SQL fragment and maps the refusal to FencingTokenStaleError (409 `fencing_token_stale`).
 */

/** The SQLSTATE bridge_fence_check raises for a stale token (a class of our own, unused by Postgres). */
export const FENCING_TOKEN_STALE_SQLSTATE = 'BF409';

/**
 * A condition to AND into the WHERE clause of the statement that applies a protected write:
 * `UPDATE … WHERE id = … AND version = … ${fenceCondition(fencing)}`. Nothing when the write is not fenced, so
 * unfenced statements keep their text (and prepared plan).
 */
export function fenceCondition(fencing: Fencing | null | undefined): Prisma.Sql {
  return fencing ? Prisma.sql`AND bridge_fence_check(${fencing.resource}::text, ${fencing.token}::bigint)` : Prisma.empty;
}

/**
 * The grant of `token` for `resource`, as an expression inside the statement that hands the token out (a worker's
 * claim: lib/workers/repository.ts, claimDueIntents): the fence then holds the token, so every lower one is refused
 * from that commit on, before the new holder has written anything. True when granted; false only when a higher
 * token was seen already.
 */
export function fenceGrant(resource: Prisma.Sql, token: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`bridge_fence_grant(${resource}, ${token})`;
}

/**
 * A worker's claim fence, `worker-claim:<intent id>`, for the intent id `intentId` (SQL): named by the database's
 * function, which the work queue's trigger uses too when it removes the fence of a claim that stops running, whichever
 * statement ends it (prisma/functions/60_work_queue.sql, intent_work_claim_ended). CLAIM_FENCE_PREFIX is the
 * same name for the engine's fencing input (claimFence); test/leases/pipeline-fencing.test.ts holds the two together.
 */
export const claimFenceResource = (intentId: Prisma.Sql) => Prisma.sql`bridge_claim_fence_resource(${intentId}::uuid)`;

export function isFencingRefusal(err: unknown): boolean {
  return sqlState(err) === FENCING_TOKEN_STALE_SQLSTATE;
}

/** The token `resource`'s fence holds: its newest grant (null: never granted). */
export async function highestAcceptedToken(resource: string, client: Tx = db()): Promise<number | null> {
  const rows = await client.$queryRaw<{ token: bigint }[]>`SELECT token FROM lease_fences WHERE resource = ${resource}`;
  return rows[0] ? tokenNumber(rows[0].token) : null;
}

/**
 * When `err` is the fence's refusal, the typed error to answer with, naming the resource's current grant as read
 * after the refusal; otherwise undefined.
 */
export async function fencingError(err: unknown, fencing: Fencing | null | undefined): Promise<FencingTokenStaleError | undefined> {
  if (!fencing || !isFencingRefusal(err)) return undefined;
  const highest = await highestAcceptedToken(fencing.resource).catch(() => null);
  return new FencingTokenStaleError(fencing.resource, fencing.token, highest);
}

/**
 * The rule on its own, for a protected write that is not a single SQL statement of ours: call it inside the
 * writer's transaction, before the write, and the fence row stays held (FOR SHARE, so grants wait) until that
 * transaction ends.
 */
export async function acceptFencingToken(tx: Tx, fencing: Fencing): Promise<boolean> {
  const rows = await tx.$queryRaw<{ accepted: boolean }[]>`SELECT bridge_fence_accept(${fencing.resource}::text, ${fencing.token}::bigint) AS accepted`;
  return rows[0].accepted;
}
