import { Prisma } from '@/generated/prisma/client';
import type { Tx } from '@/lib/db/client';
import { CLAIM_FENCE_PREFIX } from '@/lib/leases/schemas';
import { INTENT_STATUSES, TRANSITIONS, statusAfterCorrection } from '@/lib/shared/intent-states';

/**
 * The promises the engine makes, checked against the database's own records and nothing else: no process memory,
 * no logs. Each check is one read-only query that returns the rows breaking the promise (a sample, capped) and how
 * many rows it looked at. A check whose tables are missing (an older schema, a feature not deployed) is skipped and
 * says so. The state machine comes from lib/shared/intent-states.ts, so the rule exists once.
 */
export type Violation = { subject: string; detail: string };
/** `note`: what else the check saw that is worth saying but breaks no promise (e.g. counters short after a crash). */
export type CheckOutcome = { checked: number; violations: Violation[]; violationCount: number; note?: string };
export type Check = {
  name: string;
  promise: string;
  requires: string[];
  run: (tx: Tx) => Promise<CheckOutcome>;
};

/** How many offending rows a check lists; the count is always exact. */
export const SAMPLE = 20;

type Row = { subject: string; detail: string; total: bigint | number };

async function violations(tx: Tx, query: Prisma.Sql, checked: Prisma.Sql): Promise<CheckOutcome> {
  const rows = await tx.$queryRaw<Row[]>`
    WITH bad AS (${query})
    SELECT subject, detail, count(*) OVER () AS total FROM bad LIMIT ${SAMPLE}`;
  const [{ n }] = await tx.$queryRaw<{ n: bigint }[]>`${checked}`;
  return {
    checked: Number(n),
    violations: rows.map((r) => ({ subject: r.subject, detail: r.detail })),
    violationCount: rows.length ? Number(rows[0].total) : 0,
  };
}

/** The state machine's moves as two parallel arrays (from[i] → to[i]), bound as parameters and unnested in SQL. */
function pairs(list: { from: string; to: string }[]) {
  return { from: list.map((p) => p.from), to: list.map((p) => p.to) };
}
const STATUS_MOVES = pairs(INTENT_STATUSES.flatMap((from) => TRANSITIONS[from].map((to) => ({ from, to }))));
const CORRECTION_MOVES = pairs(
  INTENT_STATUSES.flatMap((from) => {
    const to = statusAfterCorrection(from);
    return to ? [{ from, to }] : [];
  }),
);

/**
 * Every change of an intent is an audit event carrying the version it produced. The events of one intent, ordered by
 * that version, must read 0 ('created'), 1, 2, … up to the intent's version, each starting where the last one ended
 * (version and status), and end at the intent's current status: then the version equals the committed changes, no
 * change lacks its event, and no rolled-back or duplicated work left one behind.
 */
const historyComplete: Check = {
  name: 'history_complete',
  promise: "every intent's version equals its committed changes: one audit event per change, none missing, none extra",
  requires: ['intents', 'audit_events'],
  run: (tx) =>
    violations(
      tx,
      Prisma.sql`
        WITH ev AS (
          SELECT intent_id, action, from_status, to_status, version_before, version_after,
                 row_number() OVER w AS n,
                 lag(version_after) OVER w AS prev_version,
                 lag(to_status) OVER w AS prev_status
          FROM audit_events
          WHERE intent_id IS NOT NULL AND version_after IS NOT NULL
          WINDOW w AS (PARTITION BY intent_id ORDER BY version_after, id)
        ), broken_links AS (
          SELECT intent_id::text AS subject,
                 CASE
                   WHEN n = 1 AND (version_after <> 0 OR action <> 'created') THEN 'history does not start with its creation at version 0'
                   WHEN n > 1 AND version_after = prev_version THEN format('two audit events for version %s', version_after)
                   WHEN n > 1 AND version_after <> prev_version + 1 THEN format('versions %s to %s have no audit event', prev_version + 1, version_after - 1)
                   WHEN n > 1 AND version_before IS DISTINCT FROM prev_version THEN format('version %s says it started at %s', version_after, coalesce(version_before::text, 'nothing'))
                   ELSE format('version %s starts from %s but the intent was %s', version_after, coalesce(from_status::text, 'nothing'), prev_status)
                 END AS detail
          FROM ev
          WHERE (n = 1 AND (version_after <> 0 OR action <> 'created'))
             OR (n > 1 AND (version_after <> prev_version + 1 OR version_before IS DISTINCT FROM prev_version
                            OR from_status IS DISTINCT FROM prev_status))
        ), last_event AS (
          SELECT DISTINCT ON (intent_id) intent_id, version_after, to_status FROM ev ORDER BY intent_id, version_after DESC, n DESC
        ), ends AS (
          SELECT i.id::text AS subject,
                 CASE WHEN l.intent_id IS NULL THEN format('version %s, status %s, but no audit event at all', i.version, i.status)
                      ELSE format('intent is at version %s (%s); its last audit event is version %s (%s)', i.version, i.status, l.version_after, l.to_status)
                 END AS detail
          FROM intents i LEFT JOIN last_event l ON l.intent_id = i.id
          WHERE l.intent_id IS NULL OR l.version_after <> i.version OR l.to_status IS DISTINCT FROM i.status
        )
        SELECT subject, detail FROM broken_links UNION ALL SELECT subject, detail FROM ends`,
      Prisma.sql`SELECT count(*) AS n FROM intents`,
    ),
};

/**
 * Replays the audit log against the state machine: a change that wrote a correction row must be the correction's
 * move (PROCESSED → CORRECTED, other statuses kept); any other change must be a transition the state machine lists.
 */
const transitionsAllowed: Check = {
  name: 'transitions_allowed',
  promise: 'no transition outside the state machine (replayed from the audit log)',
  requires: ['audit_events', 'corrections'],
  run: (tx) =>
    violations(
      tx,
      Prisma.sql`
        WITH allowed AS (
          SELECT 'status' AS kind, f, t FROM unnest(${STATUS_MOVES.from}::text[], ${STATUS_MOVES.to}::text[]) AS m(f, t)
          UNION ALL
          SELECT 'correction', f, t FROM unnest(${CORRECTION_MOVES.from}::text[], ${CORRECTION_MOVES.to}::text[]) AS m(f, t)
        ), changes AS (
          SELECT a.intent_id, a.action, a.version_after, a.from_status::text AS f, a.to_status::text AS t,
                 CASE WHEN c.id IS NULL THEN 'status' ELSE 'correction' END AS kind
          FROM audit_events a
          LEFT JOIN corrections c ON c.intent_id = a.intent_id AND c.version_after = a.version_after
          WHERE a.intent_id IS NOT NULL AND a.version_after > 0
        )
        SELECT x.intent_id::text AS subject,
               format('version %s: %s → %s is not a %s the state machine allows (%s)', x.version_after, x.f, x.t,
                      CASE x.kind WHEN 'status' THEN 'status change' ELSE 'correction' END, x.action) AS detail
        FROM changes x
        WHERE NOT EXISTS (SELECT 1 FROM allowed m WHERE m.kind = x.kind AND m.f = x.f AND m.t = x.t)`,
      Prisma.sql`SELECT count(*) AS n FROM audit_events WHERE intent_id IS NOT NULL AND version_after > 0`,
    ),
};

/** Each correction row is one change of its intent: its audit event has the same versions and statuses, and ids are unique. */
const correctionsComplete: Check = {
  name: 'corrections_complete',
  promise: 'corrections unique and complete: each one is exactly one recorded change of its intent',
  requires: ['corrections', 'audit_events', 'intents'],
  run: (tx) =>
    violations(
      tx,
      Prisma.sql`
        SELECT c.intent_id::text AS subject,
               format('correction %s (version %s → %s) has no matching audit event', c.correction_id, c.version_before, c.version_after) AS detail
        FROM corrections c
        WHERE NOT EXISTS (
          SELECT 1 FROM audit_events a
          WHERE a.intent_id = c.intent_id AND a.version_after = c.version_after AND a.version_before = c.version_before
            AND a.from_status = c.status_before AND a.to_status = c.status_after)
        UNION ALL
        SELECT intent_id::text, format('correction %s recorded %s times', correction_id, count(*))
        FROM corrections GROUP BY intent_id, correction_id HAVING count(*) > 1
        UNION ALL
        SELECT a.intent_id::text, format('audit event %s says correction %s at version %s, but no such correction row exists', a.id, a.details->>'correctionId', a.version_after)
        FROM audit_events a
        WHERE a.action = 'correction' AND a.intent_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM corrections c WHERE c.intent_id = a.intent_id AND c.version_after = a.version_after)`,
      Prisma.sql`SELECT count(*) AS n FROM corrections`,
    ),
};

/** A refused command recorded the version it met: that version existed, and it was not the one the caller expected. */
const conflictsConsistent: Check = {
  name: 'conflicts_consistent',
  promise: 'every conflict event names a version the intent really had, other than the one expected',
  requires: ['conflict_events', 'intents'],
  run: (tx) =>
    violations(
      tx,
      Prisma.sql`
        SELECT e.intent_id::text AS subject,
               CASE WHEN i.id IS NULL THEN format('conflict event %s names an intent that does not exist', e.id)
                    WHEN e.expected_version = e.current_version THEN format('conflict event %s: expected and current are both %s', e.id, e.current_version)
                    ELSE format('conflict event %s: current version %s, but the intent is only at %s', e.id, e.current_version, i.version)
               END AS detail
        FROM conflict_events e LEFT JOIN intents i ON i.id = e.intent_id
        WHERE i.id IS NULL OR e.expected_version = e.current_version OR e.current_version > i.version`,
      Prisma.sql`SELECT count(*) AS n FROM conflict_events`,
    ),
};

/**
 * An idempotency key's stored answer is what its callers were told. An answer that says a change was applied
 * (not "already applied") must point at a change the audit log has, and no two keys may both claim to have made the
 * same change: that would be one piece of work acknowledged twice, or work applied twice under one answer.
 */
const idempotencyAnswersTrue: Check = {
  name: 'idempotency_answers_true',
  promise: 'no idempotency key applied twice, and every applied answer it stored is a committed change',
  requires: ['idempotency_records', 'audit_events'],
  run: (tx) =>
    violations(
      tx,
      Prisma.sql`
        WITH answers AS (
          -- Two shapes: the engine's statements store their outcome ({ outcome, intent }); answers worked out in
          -- TypeScript are stored as { ok, value }.
          SELECT scope, key, response_body AS b FROM idempotency_records WHERE state = 'completed'
        ), applied AS (
          SELECT scope, key,
                 coalesce(b #>> '{intent,id}', b #>> '{value,intent,id}', b #>> '{value,intentId}') AS intent_id,
                 coalesce(b #>> '{intent,version}', b #>> '{value,intent,version}', b #>> '{value,version}')::int AS version
          FROM answers
          WHERE (b->>'outcome' = 'applied'
                 OR (b->>'ok' = 'true' AND coalesce(b #>> '{value,alreadyApplied}', 'false') = 'false'))
            AND coalesce(b #>> '{intent,id}', b #>> '{value,intent,id}', b #>> '{value,intentId}') IS NOT NULL
        )
        SELECT intent_id AS subject, format('key %s answered version %s, which no audit event records', key, version) AS detail
        FROM applied p
        WHERE NOT EXISTS (SELECT 1 FROM audit_events a WHERE a.intent_id = p.intent_id::uuid AND a.version_after = p.version)
        UNION ALL
        SELECT intent_id, format('%s keys each claim to have made version %s: %s', count(*), version, string_agg(key, ', '))
        FROM applied GROUP BY intent_id, version HAVING count(*) > 1`,
      Prisma.sql`SELECT count(*) AS n FROM idempotency_records WHERE state = 'completed'`,
    ),
};

/**
 * A bridge completes at most once per intent and round; a later run of the same round replays the recorded result
 * (step status `replayed`) instead of running the bridge again. So after a bridge's completed step, the same intent
 * and round may hold replayed or skipped steps of that bridge, never one that ran (running, completed, failed or
 * abandoned). Step ids come from a sequence and an intent's runs are one at a time (its execution lock), so for one
 * intent the ids are the order the steps started in.
 */
const pipelineStepsOnce: Check = {
  name: 'pipeline_steps_once',
  promise: 'no pipeline step run twice: a bridge that completed in a round is replayed, never run again, in that round',
  requires: ['pipeline_steps'],
  run: (tx) =>
    violations(
      tx,
      Prisma.sql`
        WITH done AS (
          SELECT intent_id, round, bridge, min(id) AS first_id, count(*) AS n
          FROM pipeline_steps WHERE status = 'completed' GROUP BY intent_id, round, bridge
        )
        SELECT intent_id::text AS subject, format('bridge %s completed %s times in round %s', bridge, n, round) AS detail
        FROM done WHERE n > 1
        UNION ALL
        SELECT s.intent_id::text, format('bridge %s ran again in round %s (step %s, %s, run %s) after it had completed (step %s)',
                                         s.bridge, s.round, s.id, s.status, s.run_id, d.first_id)
        FROM pipeline_steps s JOIN done d ON d.intent_id = s.intent_id AND d.round = s.round AND d.bridge = s.bridge
        WHERE s.id > d.first_id AND s.status IN ('running', 'completed', 'failed', 'abandoned')`,
      Prisma.sql`SELECT count(*) AS n FROM pipeline_steps`,
    ),
};

/**
 * Fenced writes (a status change or correction carrying `fencing: { resource, token }`) record the lease log's
 * position when the fence accepted them (bridge_fenced_write_record, prisma/functions/00_helpers.sql): every grant
 * of the resource with an event id up to that position was made before the write. None of those may carry a higher
 * token — the write would then come from a holder whose lease had already passed to someone else. Besides, the
 * fence itself never went back: it holds at least every token written or granted for its resource (a worker's claim
 * fence holds nothing once its claim ended, which refuses every token; while it holds one, that rule stands), and one
 * intent's fenced writes of one resource (in version order) never return to a lower token.
 */
const fencedWritesCurrent: Check = {
  name: 'fenced_writes_current',
  promise: 'no fenced write accepted with a stale token: no write after a higher token of its lease was granted',
  requires: ['audit_events', 'lease_events', 'lease_fences'],
  run: (tx) =>
    violations(
      tx,
      Prisma.sql`
        WITH writes AS (
          SELECT a.id, a.intent_id, a.version_after, a.details->'fencing'->>'resource' AS resource,
                 (a.details->'fencing'->>'token')::bigint AS token, (a.details->'fencing'->>'leaseLogPosition')::bigint AS position
          FROM audit_events a
          WHERE jsonb_typeof(a.details) = 'object' AND jsonb_typeof(a.details->'fencing') = 'object'
        ), after_grant AS (
          SELECT w.intent_id::text AS subject,
                 format('version %s was written with token %s of %s, after token %s had been granted (lease event %s)',
                        w.version_after, w.token, w.resource, g.token, g.id) AS detail
          FROM writes w
          CROSS JOIN LATERAL (
            SELECT e.id, e.token FROM lease_events e
            WHERE e.resource = w.resource AND e.event = 'acquired' AND e.token > w.token AND e.id <= w.position
            ORDER BY e.id LIMIT 1
          ) g
        ), fence_behind AS (
          SELECT x.resource AS subject, format('the fence holds %s, but %s %s was %s', coalesce(f.token::text, 'nothing'), x.what, x.token, x.how) AS detail
          FROM (
            SELECT resource, max(token) AS token, 'token' AS what, 'written' AS how FROM writes GROUP BY resource
            UNION ALL
            SELECT resource, max(token), 'token', 'granted' FROM lease_events WHERE event = 'acquired' GROUP BY resource
          ) x LEFT JOIN lease_fences f ON f.resource = x.resource
          WHERE (f.token IS NULL AND NOT starts_with(x.resource, ${CLAIM_FENCE_PREFIX}::text)) OR f.token < x.token
        ), went_back AS (
          SELECT intent_id::text AS subject,
                 format('version %s was written with token %s of %s after version %s had been written with token %s',
                        version_after, token, resource, prev_version, prev_token) AS detail
          FROM (
            SELECT w.*, lag(w.token) OVER k AS prev_token, lag(w.version_after) OVER k AS prev_version
            FROM writes w WINDOW k AS (PARTITION BY w.intent_id, w.resource ORDER BY w.version_after)
          ) o
          WHERE token < prev_token
        )
        SELECT subject, detail FROM after_grant
        UNION ALL SELECT subject, detail FROM fence_behind
        UNION ALL SELECT subject, detail FROM went_back`,
      Prisma.sql`SELECT count(*) AS n FROM audit_events WHERE jsonb_typeof(details) = 'object' AND jsonb_typeof(details->'fencing') = 'object'`,
    ),
};

/**
 * The per-status counts the console shows (lib/counts: totals plus unfolded deltas, kept by triggers) against the
 * intents table counted row by row, in the same snapshot: they must be equal, status by status.
 */
const statusCountsExact: Check = {
  name: 'status_counts_exact',
  promise: 'the status counts equal the intents behind them, status by status',
  requires: ['intents', 'intent_status_totals', 'intent_status_deltas'],
  run: (tx) =>
    violations(
      tx,
      Prisma.sql`
        WITH kept AS (
          SELECT is_replay, status::text AS status, sum(n) AS n
          FROM (SELECT is_replay, status, n FROM intent_status_totals UNION ALL SELECT is_replay, status, n FROM intent_status_deltas) c
          GROUP BY 1, 2
        ), actual AS (
          SELECT is_replay, status::text AS status, count(*) AS n FROM intents GROUP BY 1, 2
        )
        SELECT coalesce(k.status, a.status) || CASE WHEN coalesce(k.is_replay, a.is_replay) THEN ' (replay intents)' ELSE '' END AS subject,
               format('the counts say %s, the intents table has %s', coalesce(k.n, 0), coalesce(a.n, 0)) AS detail
        FROM kept k FULL JOIN actual a ON a.is_replay = k.is_replay AND a.status = k.status
        WHERE coalesce(k.n, 0) <> coalesce(a.n, 0)`,
      Prisma.sql`SELECT count(*) AS n FROM intents`,
    ),
};

/** Each counter beside the events that record the same occurrences, whoever wrote them (replay work included). */
const counterPairs = Prisma.sql`
  SELECT 'update_status' AS operation, 'success' AS outcome,
         (SELECT coalesce(sum(count), 0) FROM outcome_counts WHERE operation = 'update_status' AND outcome = 'success') AS counted,
         (SELECT count(*) FROM audit_events WHERE action = 'status_change' AND intent_id IS NOT NULL AND version_after > 0) AS events
  UNION ALL
  SELECT 'bulk_update_status', 'success',
         (SELECT coalesce(sum(count), 0) FROM outcome_counts WHERE operation = 'bulk_update_status' AND outcome = 'success'),
         (SELECT count(*) FROM audit_events WHERE action = 'bulk_status_change' AND intent_id IS NOT NULL)
  UNION ALL
  SELECT 'reevaluate', 'success',
         (SELECT coalesce(sum(count), 0) FROM outcome_counts WHERE operation = 'reevaluate' AND outcome = 'success'),
         (SELECT count(*) FROM corrections)
  UNION ALL
  SELECT o.op, 'stale_expected_version',
         (SELECT coalesce(sum(count), 0) FROM outcome_counts WHERE operation = o.op AND outcome = 'stale_expected_version'),
         (SELECT count(*) FROM conflict_events WHERE operation = o.op)
  FROM (VALUES ('update_status'), ('reevaluate')) AS o(op)
  UNION ALL
  SELECT d.operation, 'deadlock_detected',
         (SELECT coalesce(sum(count), 0) FROM outcome_counts WHERE operation = d.operation AND outcome = 'deadlock_detected'),
         (SELECT count(*) FROM deadlock_events WHERE operation = d.operation)
  FROM (SELECT DISTINCT operation FROM outcome_counts WHERE outcome = 'deadlock_detected') d`;

/**
 * The persisted outcome counters (outcome_counts: /api/metrics and the Contention page) against the events that
 * record each occurrence on their own: applied status changes, bulk changes and corrections against their audit
 * events and correction rows, refused stale versions against conflict events, detected deadlocks against deadlock
 * events. A counter is recorded only after its event committed, and buffered for about a second before it is
 * written (lib/intents/outcomes.ts), so a process killed before its flush leaves a counter short of its events;
 * a counter above its events counted something that never happened, or counted it twice. The shortfall is reported.
 */
const countersWithinEvents: Check = {
  name: 'counters_within_events',
  promise: 'the outcome counters never exceed the events behind them (short only by what a killed process had not flushed)',
  requires: ['outcome_counts', 'audit_events', 'corrections', 'conflict_events', 'deadlock_events'],
  run: async (tx) => {
    const outcome = await violations(
      tx,
      Prisma.sql`
        WITH pairs AS (${counterPairs}
        )
        SELECT format('%s %s', operation, outcome) AS subject, format('counted %s, but only %s events record it', counted, events) AS detail
        FROM pairs WHERE counted > events`,
      Prisma.sql`SELECT coalesce(sum(counted), 0) AS n FROM (${counterPairs}) p`,
    );
    const [{ short }] = await tx.$queryRaw<{ short: bigint }[]>`SELECT coalesce(sum(greatest(events - counted, 0)), 0) AS short FROM (${counterPairs}) p`;
    return { ...outcome, note: Number(short) ? `counters short of their events by ${short} in all` : 'counters equal their events' };
  },
};

/**
 * A wait is decided once (lib/pipeline/waits.ts): an answered wait has exactly one accepted answer and one decision
 * event, a wait decided otherwise (deadline, cancelled) or still open has none, and only a decided wait is resumed,
 * by one `wait_resumed` event at most.
 */
const waitsDecidedOnce: Check = {
  name: 'waits_decided_once',
  promise: 'a wait is decided once: an answered wait has exactly one accepted answer, any other none, and a wait resumes at most once, after its decision',
  requires: ['pipeline_waits', 'pipeline_wait_answers', 'audit_events'],
  run: (tx) =>
    violations(
      tx,
      Prisma.sql`
        WITH w AS (
          SELECT w.id, w.intent_id, w.state, w.resumed_at,
                 (SELECT count(*) FROM pipeline_wait_answers a WHERE a.wait_id = w.id AND a.outcome = 'accepted') AS accepted,
                 (SELECT count(*) FROM audit_events e WHERE e.intent_id = w.intent_id AND e.action = 'wait_resumed' AND e.details->>'waitId' = w.id::text) AS resumes
          FROM pipeline_waits w
        )
        SELECT intent_id::text AS subject,
               format('wait %s is %s with %s accepted answer(s), resumed %s time(s)%s', id, state, accepted, resumes,
                      CASE WHEN resumed_at IS NOT NULL AND state NOT IN ('answered', 'timed_out') THEN ' before any decision' ELSE '' END) AS detail
        FROM w
        WHERE (state = 'answered' AND accepted <> 1) OR (state <> 'answered' AND accepted <> 0) OR resumes > 1
           OR (resumed_at IS NOT NULL) <> (resumes = 1) OR (resumed_at IS NOT NULL AND state NOT IN ('answered', 'timed_out'))`,
      Prisma.sql`SELECT count(*) AS n FROM pipeline_waits`,
    ),
};

export const CHECKS: Check[] = [
  historyComplete,
  transitionsAllowed,
  correctionsComplete,
  conflictsConsistent,
  idempotencyAnswersTrue,
  pipelineStepsOnce,
  waitsDecidedOnce,
  fencedWritesCurrent,
  statusCountsExact,
  countersWithinEvents,
];
