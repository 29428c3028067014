import type { Tx } from '@/lib/db/client';

/**
 * The work queue's statements (intent_work), one per operation, each returning what it did. The shapes follow
 * River's river_job.sql and graphile-worker's getJobs/completeJobs: a CTE takes the rows with FOR UPDATE SKIP LOCKED,
 * a conditional UPDATE applies, RETURNING says what happened.
 *
 * Every write of a claim after the claim itself is conditional on its token and on the row still being `running`:
 * once the rescuer (or a release, or an operator's retry) has moved the row on, the old holder's writes change
 * nothing, and it learns so from the empty result. The rescuer itself re-checks `running` and the expired lease in
 * the statement that moves the row (River's #1302 was a rescue decided on an earlier read).
 */

export type Claim = {
  intentId: string;
  claimToken: string;
  attempt: number;
  maxAttempts: number;
  round: number;
  lastError: string | null;
  /** The previous attempt was the last one and was rescued: the intent is to be failed, not run again. */
  exhausted: boolean;
};

const ms = (n: number) => n; // documents that the number is milliseconds where it is bound

/**
 * Claims up to `limit` due rows (available or retryable, run_after passed) unless claiming is paused. Rows whose
 * intent is already COMPLETED or FAILED are never claimed: they are settled in the same statement.
 */
export async function claimDueIntents(client: Tx, args: { workerName: string; limit: number; leaseMs: number; maxAttempts: number }): Promise<Claim[]> {
  return client.$queryRaw<Claim[]>`
    WITH due AS (
      SELECT w.intent_id, w.attempt AS prior_attempt, w.max_attempts AS prior_max
      FROM intent_work w
      WHERE w.state IN ('available', 'retryable') AND w.run_after <= now()
        AND NOT EXISTS (SELECT 1 FROM worker_control c WHERE c.paused)
      ORDER BY w.run_after, w.intent_id
      LIMIT ${args.limit}
      FOR UPDATE SKIP LOCKED
    ), due_status AS (
      SELECT d.*, i.status::text AS intent_status FROM due d JOIN intents i ON i.id = d.intent_id
    ), claimed AS (
      UPDATE intent_work w SET
        state = 'running',
        attempt = CASE WHEN d.prior_attempt < d.prior_max THEN d.prior_attempt + 1 ELSE d.prior_attempt END,
        max_attempts = CASE WHEN d.prior_attempt = 0 THEN ${args.maxAttempts}::int ELSE d.prior_max END,
        claim_token = nextval('intent_work_claim_token_seq'),
        claimed_by = ${args.workerName},
        claimed_at = now(),
        heartbeat_at = now(),
        lease_until = now() + ${ms(args.leaseMs)} * interval '1 millisecond'
      FROM due_status d
      WHERE w.intent_id = d.intent_id AND d.intent_status NOT IN ('COMPLETED', 'FAILED')
      RETURNING w.intent_id::text AS "intentId", w.claim_token::text AS "claimToken", w.attempt, w.max_attempts AS "maxAttempts",
                w.round, w.last_error AS "lastError", (d.prior_attempt >= d.prior_max) AS exhausted
    ), settled AS (
      UPDATE intent_work w SET state = CASE WHEN d.intent_status = 'COMPLETED' THEN 'completed' ELSE 'failed' END, finished_at = now()
      FROM due_status d
      WHERE w.intent_id = d.intent_id AND d.intent_status IN ('COMPLETED', 'FAILED')
    )
    SELECT * FROM claimed ORDER BY "intentId"`;
}

/** Extends the leases of the claims still held; returns the tokens that were (the others are lost). */
export async function heartbeatClaims(client: Tx, args: { claimTokens: string[]; leaseMs: number }): Promise<string[]> {
  if (args.claimTokens.length === 0) return [];
  const rows = await client.$queryRaw<{ claimToken: string }[]>`
    UPDATE intent_work SET heartbeat_at = now(), lease_until = now() + ${ms(args.leaseMs)} * interval '1 millisecond'
    WHERE claim_token = ANY(${args.claimTokens}::bigint[]) AND state = 'running'
    RETURNING claim_token::text AS "claimToken"`;
  return rows.map((r) => r.claimToken);
}

type ClaimRef = { intentId: string; claimToken: string };

/** Ends a claim for good: `completed` or `failed` (with the reason). False: the claim was no longer held. */
export async function finishClaim(client: Tx, args: ClaimRef & { state: 'completed' | 'failed'; error: string | null }): Promise<boolean> {
  const rows = await client.$queryRaw<{ intentId: string }[]>`
    UPDATE intent_work SET state = ${args.state}, finished_at = now(), lease_until = NULL, last_error = COALESCE(${args.error}, last_error)
    WHERE intent_id = ${args.intentId}::uuid AND claim_token = ${args.claimToken}::bigint AND state = 'running'
    RETURNING intent_id::text AS "intentId"`;
  return rows.length === 1;
}

/** A failed attempt with attempts left: retryable after `delayMs` (the caller's backoff). False: not held any more. */
export async function scheduleRetry(client: Tx, args: ClaimRef & { delayMs: number; error: string }): Promise<Date | null> {
  const rows = await client.$queryRaw<{ runAfter: Date }[]>`
    UPDATE intent_work SET state = 'retryable', run_after = now() + ${ms(args.delayMs)} * interval '1 millisecond', last_error = ${args.error}, lease_until = NULL
    WHERE intent_id = ${args.intentId}::uuid AND claim_token = ${args.claimToken}::bigint AND state = 'running'
    RETURNING run_after AS "runAfter"`;
  return rows[0]?.runAfter ?? null;
}

/**
 * Gives a claim back without counting the attempt: the worker is stopping, or another execution holds the intent.
 * Claimable again after `delayMs`. False: not held any more.
 */
export async function releaseClaim(client: Tx, args: ClaimRef & { delayMs: number; reason: string }): Promise<boolean> {
  const rows = await client.$queryRaw<{ intentId: string }[]>`
    UPDATE intent_work SET state = 'available', attempt = greatest(attempt - 1, 0), run_after = now() + ${ms(args.delayMs)} * interval '1 millisecond',
                           lease_until = NULL, last_error = ${args.reason}
    WHERE intent_id = ${args.intentId}::uuid AND claim_token = ${args.claimToken}::bigint AND state = 'running'
    RETURNING intent_id::text AS "intentId"`;
  return rows.length === 1;
}

export type Rescued = { intentId: string; claimToken: string; claimedBy: string | null };

/**
 * Rescues claims whose lease ran out by the database's clock: they become retryable at once (the crash was the
 * worker's, not the intent's; the attempt stays counted, so an intent that keeps killing its workers still fails
 * after its maximum). Their runs are marked abandoned and each rescue is audited.
 */
export async function rescueStaleClaims(client: Tx, args: { rescuer: string; limit: number }): Promise<Rescued[]> {
  return client.$queryRaw<Rescued[]>`
    WITH stale AS (
      SELECT intent_id FROM intent_work
      WHERE state = 'running' AND lease_until < now()
      ORDER BY lease_until
      LIMIT ${args.limit}
      FOR UPDATE SKIP LOCKED
    ), rescued AS (
      UPDATE intent_work w SET state = 'retryable', run_after = now(), rescues = w.rescues + 1, lease_until = NULL,
             last_error = format('claim %s of %s expired (last heartbeat %s); rescued', w.claim_token, coalesce(w.claimed_by, 'an unknown worker'),
                                 to_char(w.heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS"Z"'))
      FROM stale s
      WHERE w.intent_id = s.intent_id AND w.state = 'running' AND w.lease_until < now()
      RETURNING w.intent_id, w.claim_token, w.claimed_by
    ), runs AS (
      UPDATE pipeline_runs r SET status = 'abandoned', finished_at = now(), error = 'its worker stopped heartbeating; the claim was rescued'
      FROM rescued x
      WHERE r.claim_token = x.claim_token AND r.status = 'running'
    ), steps AS (
      UPDATE pipeline_steps s SET status = 'abandoned', finished_at = now()
      FROM rescued x
      WHERE s.claim_token = x.claim_token AND s.status = 'running'
    ), audit AS (
      INSERT INTO audit_events (intent_id, action, actor, details)
      SELECT intent_id, 'claim_rescued', ${args.rescuer}, jsonb_build_object('claimToken', claim_token::text, 'claimedBy', claimed_by)
      FROM rescued
    )
    SELECT intent_id::text AS "intentId", claim_token::text AS "claimToken", claimed_by AS "claimedBy" FROM rescued`;
}

// ── The workers registry and their counts ────────────────────────────────────────────────────────────────────

export async function registerWorker(client: Tx, args: { id: string; name: string; host: string; pid: number; concurrency: number }): Promise<void> {
  await client.$executeRaw`
    INSERT INTO workers (id, name, host, pid, concurrency) VALUES (${args.id}::uuid, ${args.name}, ${args.host}, ${args.pid}, ${args.concurrency})`;
}

/**
 * The worker's heartbeat: its row (state, in-flight) and the events it counted since the last one, added to the
 * minute they are flushed in. Stopped workers of more than a day ago are forgotten here too.
 */
export async function heartbeatWorker(client: Tx, args: { id: string; state: 'running' | 'stopping' | 'stopped'; inFlight: number; events: string[]; counts: number[] }): Promise<void> {
  await client.$executeRaw`
    WITH me AS (
      UPDATE workers SET heartbeat_at = now(), in_flight = ${args.inFlight}, state = ${args.state},
                         stopped_at = CASE WHEN ${args.state} = 'stopped' THEN now() END
      WHERE id = ${args.id}::uuid
    ), counted AS (
      INSERT INTO worker_stats (minute, event, count)
      SELECT date_trunc('minute', now()), e, n FROM unnest(${args.events}::text[], ${args.counts}::bigint[]) AS t(e, n)
      ON CONFLICT (minute, event) DO UPDATE SET count = worker_stats.count + EXCLUDED.count
    )
    DELETE FROM workers WHERE heartbeat_at < now() - interval '1 day'`;
}
