import { expect } from 'vitest';
import { db } from '@/lib/db/client';
import { flushOutcomes } from '@/lib/intents/outcomes';

/**
 * Shared checks for the engine and API tests: history integrity (every committed change is one version,
 * one audit event; corrections without gaps or duplicates), database snapshots for "nothing changed", and an
 * in-process barrier for ordering two async paths.
 */

type AuditRow = { action: string; fromStatus: string | null; toStatus: string | null; versionBefore: number | null; versionAfter: number | null; correctionId: string | null };
type CorrectionRow = { correctionId: string; versionBefore: number; versionAfter: number; statusBefore: string; statusAfter: string };

export async function auditOf(id: string): Promise<AuditRow[]> {
  return db().$queryRaw<AuditRow[]>`
    SELECT action, from_status::text AS "fromStatus", to_status::text AS "toStatus", version_before AS "versionBefore",
           version_after AS "versionAfter", details->>'correctionId' AS "correctionId"
    FROM audit_events WHERE intent_id = ${id}::uuid ORDER BY id`;
}

export async function correctionsOf(id: string): Promise<CorrectionRow[]> {
  return db().$queryRaw<CorrectionRow[]>`
    SELECT correction_id AS "correctionId", version_before AS "versionBefore", version_after AS "versionAfter",
           status_before::text AS "statusBefore", status_after::text AS "statusAfter"
    FROM corrections WHERE intent_id = ${id}::uuid ORDER BY id`;
}

/**
 * Asserts the intent's history is whole: one 'created' event at version 0, then exactly one audit event per
 * version 1..version (refusals, audited as status_change_refused, aside), each from the previous version and status; one correction row per 'correction' event with
 * the same versions and id; no duplicate correction ids. Returns the counts for further assertions.
 */
export async function expectCompleteHistory(id: string): Promise<{ version: number; changes: number; corrections: number }> {
  const [intent] = await db().$queryRaw<{ version: number; status: string }[]>`SELECT version, status::text AS status FROM intents WHERE id = ${id}::uuid`;
  expect(intent, `intent ${id} exists`).toBeDefined();
  const audit = await auditOf(id);
  expect(audit[0]).toMatchObject({ action: 'created', versionAfter: 0 });
  // A refused status change is audited but moved nothing: it is no version of the history.
  const changes = audit.slice(1).filter((e) => e.action !== 'status_change_refused');
  expect(changes.map((e) => e.versionAfter)).toEqual(Array.from({ length: intent.version }, (_, i) => i + 1));
  let status = audit[0].toStatus;
  for (const e of changes) {
    expect(e.versionBefore).toBe(e.versionAfter! - 1);
    expect(e.fromStatus).toBe(status);
    status = e.toStatus;
  }
  expect(status).toBe(intent.status);

  const corrections = await correctionsOf(id);
  const correctionEvents = changes.filter((e) => e.action === 'correction');
  expect(corrections.map((c) => [c.correctionId, c.versionBefore, c.versionAfter])).toEqual(
    correctionEvents.map((e) => [e.correctionId, e.versionBefore, e.versionAfter]),
  );
  expect(new Set(corrections.map((c) => c.correctionId)).size).toBe(corrections.length);
  return { version: intent.version, changes: changes.length, corrections: corrections.length };
}

/** Row counts of every engine table plus each intent's status, version and payload: equal snapshots mean nothing changed. */
export async function snapshot() {
  const [counts] = await db().$queryRaw<Record<string, number>[]>`
    SELECT (SELECT count(*) FROM intents)::int AS intents, (SELECT count(*) FROM corrections)::int AS corrections,
           (SELECT count(*) FROM audit_events)::int AS audit_events, (SELECT count(*) FROM conflict_events)::int AS conflict_events,
           (SELECT count(*) FROM idempotency_records)::int AS idempotency_records, (SELECT count(*) FROM deadlock_events)::int AS deadlock_events`;
  const intents = await db().$queryRaw<unknown[]>`SELECT id::text, status::text, version, payload, updated_at FROM intents ORDER BY id`;
  return { counts, intents };
}

/** Sums of persisted outcome counts per "operation outcome [transition]", after flushing the in-memory buffer. */
export async function persistedOutcomes(): Promise<Record<string, number>> {
  await flushOutcomes();
  const rows = await db().$queryRaw<{ operation: string; outcome: string; transition: string; n: bigint }[]>`
    SELECT operation, outcome, transition, sum(count) AS n FROM outcome_counts GROUP BY 1, 2, 3`;
  return Object.fromEntries(rows.map((r) => [`${r.operation} ${r.outcome}${r.transition ? ` ${r.transition}` : ''}`, Number(r.n)]));
}

/** Flushes what earlier steps counted and empties the outcome tables, so a test counts only its own outcomes. */
export async function clearOutcomes(): Promise<void> {
  await flushOutcomes();
  await db().$executeRaw`TRUNCATE outcome_counts, lock_wait_buckets`;
}

/** Resolves `wait()` for everyone once `parties` have arrived. */
export function barrier(parties: number) {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    async arrive(): Promise<void> {
      arrived += 1;
      if (arrived >= parties) open();
      await opened;
    },
  };
}

export async function settle<T>(promises: Promise<T>[]) {
  const results = await Promise.allSettled(promises);
  return {
    values: results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])),
    errors: results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : [])),
  };
}


export async function backendPid(client: { query: (sql: string) => Promise<{ rows: { pid: number }[] }> }): Promise<number> {
  return (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
}

/** True while a backend labelled `label` waits for a lock that `blockerPid` holds or is queued ahead for. */
export async function isBlockedBy(label: string, blockerPid: number): Promise<boolean> {
  const rows = await db().$queryRaw<unknown[]>`
    SELECT 1 FROM pg_stat_activity
    WHERE application_name = ${label} AND wait_event_type = 'Lock' AND ${blockerPid}::int = ANY(pg_blocking_pids(pid))`;
  return rows.length > 0;
}

/** True while backend `pid` waits for a lock. */
export async function isWaiting(pid: number): Promise<boolean> {
  const rows = await db().$queryRaw<unknown[]>`SELECT 1 FROM pg_stat_activity WHERE pid = ${pid}::int AND wait_event_type = 'Lock'`;
  return rows.length > 0;
}
