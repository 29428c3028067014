import type pg from 'pg';
import type { Ack } from './clients';

/** The run's verdict from the database's own records: what was acknowledged must be there, the outbox must be empty. */

/** Every acknowledged success must still be in the database: the change at the version it was acknowledged with. */
export async function missingAcks(client: pg.Client, acks: Ack[]): Promise<string[]> {
  const status = acks.filter((a): a is Extract<Ack, { kind: 'status' }> => a.kind === 'status');
  const corrections = acks.filter((a): a is Extract<Ack, { kind: 'correction' }> => a.kind === 'correction');
  const created = acks.filter((a) => a.kind === 'created');
  const runs = acks.filter((a): a is Extract<Ack, { kind: 'pipeline' }> => a.kind === 'pipeline');
  const fenced = [...status, ...corrections].filter((a) => a.fencing);
  const missing: string[] = [];
  const s = await client.query<{ intent_id: string; version: number; status: string }>(
    `SELECT a.intent_id, a.version, a.status FROM unnest($1::uuid[], $2::int[], $3::text[]) AS a(intent_id, version, status)
     WHERE NOT EXISTS (SELECT 1 FROM audit_events e WHERE e.intent_id = a.intent_id AND e.version_after = a.version AND e.to_status::text = a.status)`,
    [status.map((a) => a.intentId), status.map((a) => a.version), status.map((a) => a.status)],
  );
  for (const r of s.rows) missing.push(`status ${r.status} at version ${r.version} of ${r.intent_id} was acknowledged but is not in the audit log`);
  const c = await client.query<{ intent_id: string; correction_id: string }>(
    `SELECT a.intent_id, a.correction_id FROM unnest($1::uuid[], $2::text[]) AS a(intent_id, correction_id)
     WHERE NOT EXISTS (SELECT 1 FROM corrections c WHERE c.intent_id = a.intent_id AND c.correction_id = a.correction_id)`,
    [corrections.map((a) => a.intentId), corrections.map((a) => a.correctionId)],
  );
  for (const r of c.rows) missing.push(`correction ${r.correction_id} of ${r.intent_id} was acknowledged but is not recorded`);
  const i = await client.query<{ id: string }>(
    `SELECT a.id FROM unnest($1::uuid[]) AS a(id) WHERE NOT EXISTS (SELECT 1 FROM intents i WHERE i.id = a.id)`,
    [created.map((a) => a.intentId)],
  );
  for (const r of i.rows) missing.push(`intent ${r.id} was created (201) but does not exist`);
  const p = await client.query<{ run_id: string; status: string; found: string | null }>(
    `SELECT a.run_id, a.status, r.status AS found FROM unnest($1::uuid[], $2::text[]) AS a(run_id, status)
     LEFT JOIN pipeline_runs r ON r.id = a.run_id WHERE r.status IS DISTINCT FROM a.status`,
    [runs.map((a) => a.runId), runs.map((a) => a.status)],
  );
  for (const r of p.rows) missing.push(`pipeline run ${r.run_id} was answered ${r.status} but is ${r.found ?? 'not recorded'}`);
  // A fenced write's audit event names the lease token it was accepted with.
  const f = await client.query<{ intent_id: string; version: number; token: string }>(
    `SELECT a.intent_id, a.version, a.token FROM unnest($1::uuid[], $2::int[], $3::text[], $4::bigint[]) AS a(intent_id, version, resource, token)
     WHERE NOT EXISTS (SELECT 1 FROM audit_events e WHERE e.intent_id = a.intent_id AND e.version_after = a.version
                         AND e.details->'fencing'->>'resource' = a.resource AND (e.details->'fencing'->>'token')::bigint = a.token)`,
    [fenced.map((a) => a.intentId), fenced.map((a) => a.version), fenced.map((a) => a.fencing!.resource), fenced.map((a) => a.fencing!.token)],
  );
  for (const r of f.rows) missing.push(`fenced write at version ${r.version} of ${r.intent_id} (token ${r.token}) was acknowledged but its audit event does not record that token`);
  return missing;
}

export async function outboxBacklog(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_events WHERE published_at IS NULL');
  return rows[0].n;
}

/** What the workers did, from their records: runs by door and how they ended, claims rescued from killed workers. */
export async function workerRecords(client: pg.Client): Promise<{ pipelineRuns: Record<string, Record<string, number>>; claimsRescued: number }> {
  const { rows: runRows } = await client.query<{ door: string; status: string; n: number }>('SELECT door, status, count(*)::int AS n FROM pipeline_runs GROUP BY 1, 2 ORDER BY 1, 2');
  const { rows: rescueRows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM audit_events WHERE action = 'claim_rescued'`);
  const pipelineRuns = runRows.reduce<Record<string, Record<string, number>>>((acc, r) => ({ ...acc, [r.door]: { ...acc[r.door], [r.status]: r.n } }), {});
  return { pipelineRuns, claimsRescued: rescueRows[0].n };
}

/** The invariant checker (lib/invariants) over the whole database, the stream included when there is one. */
export async function invariantsAfterRun(directUrl: string, natsUrl: string | undefined) {
  const { createPool, createPrisma } = await import('../../lib/db/client');
  const { checkInvariants, allChecks } = await import('../../lib/invariants/run');
  const pool = createPool(directUrl, 2);
  const prisma = createPrisma(pool, { preparedStatements: false });
  const invariants = await checkInvariants(prisma, { checks: allChecks({ natsUrl, outboxDrained: true }) });
  await prisma.$disconnect();
  await pool.end();
  return invariants;
}
