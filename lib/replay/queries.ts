import { db } from '@/lib/db/client';
import type { IntentStatus } from '@/lib/shared/intent-states';

/** What the database itself says about a scenario's intents afterwards: the scenario checks against this, not its own bookkeeping. */
export type IntentState = {
  id: string;
  status: IntentStatus;
  version: number;
  payload: Record<string, unknown>;
  /** Audit events that changed the status (single, bulk, pipeline step). */
  statusChanges: number;
  /** Correction rows, and the audit events of corrections. */
  corrections: number;
  correctionEvents: number;
};

export async function intentStates(ids: string[]): Promise<Map<string, IntentState>> {
  const rows = await db().$queryRaw<(Omit<IntentState, 'statusChanges' | 'corrections' | 'correctionEvents'> & { statusChanges: bigint; corrections: bigint; correctionEvents: bigint })[]>`
    SELECT i.id::text AS id, i.status::text AS status, i.version, i.payload,
           (SELECT count(*) FROM audit_events a WHERE a.intent_id = i.id AND a.action IN ('status_change', 'bulk_status_change', 'pipeline_step')) AS "statusChanges",
           (SELECT count(*) FROM corrections c WHERE c.intent_id = i.id) AS corrections,
           (SELECT count(*) FROM audit_events a WHERE a.intent_id = i.id AND a.action = 'correction') AS "correctionEvents"
    FROM intents i WHERE i.id = ANY(${ids}::uuid[])`;
  return new Map(
    rows.map((r) => [r.id, { ...r, statusChanges: Number(r.statusChanges), corrections: Number(r.corrections), correctionEvents: Number(r.correctionEvents) }]),
  );
}

/** Server settings that explain a run's figures (deadlock detection waits deadlock_timeout; commits wait for the WAL flush). */
export async function serverSettings(): Promise<{ version: string; settings: Record<string, string> }> {
  const rows = await db().$queryRaw<{ name: string; setting: string }[]>`
    SELECT name, current_setting(name) AS setting FROM pg_settings
    WHERE name IN ('deadlock_timeout', 'synchronous_commit', 'fsync', 'max_connections', 'shared_buffers', 'lock_timeout', 'default_transaction_isolation')`;
  const [{ version }] = await db().$queryRaw<{ version: string }[]>`SELECT current_setting('server_version') AS version`;
  return { version, settings: Object.fromEntries(rows.map((r) => [r.name, r.setting])) };
}
