import { db } from '@/lib/db/client';

/**
 * A large, consistent data set for measuring the console at scale (docs/SCALE.md: the Intents page at 100,000 and 1,000,000 intents).
 * Set-based (`INSERT … SELECT generate_series`) rather than through the engine, which would take minutes: one
 * transaction writes the intents, their audit trail (created, each status step, the correction), and a correction
 * row for every CORRECTED intent, with versions, statuses and correction ids exactly as the engine would leave them
 * (correction id = sha256 of `intentId \n canonical diff`, lib/intents/json.ts). Statuses are spread as a busy
 * system's are: mostly COMPLETED, some in flight, some FAILED. Times spread over the last 30 days.
 */
export type LargeSeedResult = { intents: number; auditEvents: number; corrections: number; ms: number };

export async function seedLargeData(count: number): Promise<LargeSeedResult> {
  const started = performance.now();
  const result = await db().$transaction(
    async (tx) => {
      // Reproducible payloads and times (random() is per session; the transaction keeps one connection).
      await tx.$queryRaw`SELECT setseed(0.42)::text`;
      await tx.$executeRaw`
        CREATE TEMP TABLE seed_large ON COMMIT DROP AS
        SELECT gen_random_uuid() AS id, g,
               (ARRAY['RECEIVED','RECEIVED','NORMALIZED','NORMALIZED','PROCESSED','PROCESSED','PROCESSED','CORRECTED','CORRECTED',
                      'COMPLETED','COMPLETED','COMPLETED','COMPLETED','COMPLETED','COMPLETED','COMPLETED','COMPLETED','COMPLETED',
                      'FAILED','FAILED'])[1 + g % 20] AS status,
               (ARRAY['payment','refund','shipment','invoice','address_change'])[1 + g % 5] AS kind,
               (ARRAY['checkout-service','billing-sync','warehouse-feed','partner-api','ops-import'])[1 + (g / 5) % 5] AS source,
               now() - interval '1 hour' - random() * interval '30 days' AS created_at,
               random() * interval '1 hour' AS age
        FROM generate_series(1, ${count}::int) g`;
      // The path each status took from RECEIVED (the correction is the last step of CORRECTED).
      await tx.$executeRaw`
        ALTER TABLE seed_large ADD COLUMN steps text[], ADD COLUMN payload jsonb`;
      await tx.$executeRaw`
        UPDATE seed_large SET
          steps = CASE status
                    WHEN 'RECEIVED' THEN ARRAY[]::text[]
                    WHEN 'NORMALIZED' THEN ARRAY['NORMALIZED']
                    WHEN 'PROCESSED' THEN ARRAY['NORMALIZED','PROCESSED']
                    WHEN 'CORRECTED' THEN ARRAY['NORMALIZED','PROCESSED','CORRECTED']
                    WHEN 'COMPLETED' THEN ARRAY['NORMALIZED','PROCESSED','COMPLETED']
                    ELSE ARRAY['NORMALIZED','FAILED'] END,
          payload = jsonb_build_object(
            'kind', kind,
            'reference', upper(left(kind, 3)) || '-' || (100000 + g),
            'customer', jsonb_build_object('id', 'C' || (1000 + (g::bigint * 7919) % 9000),
                                           'city', (ARRAY['Lisbon','Osaka','Denver','Leeds','Porto','Kyoto','Austin','Bristol'])[1 + (g / 3) % 8]),
            'amount', round((random() * 2000)::numeric, 2),
            'currency', (ARRAY['EUR','USD','GBP','JPY'])[1 + (g / 7) % 4],
            'lines', 1 + g % 5,
            'batch', 'large-seed')`;
      // audit_events takes rows only into months it has a partition for (prisma/functions/70_partitions.sql): the
      // seed's back-dated months are made first.
      await tx.$queryRaw`SELECT "bridge_partitions_cover"('audit_events'::regclass, (SELECT min(created_at) FROM seed_large), now())::text`;
      const intents = await tx.$executeRaw`
        INSERT INTO intents (id, status, payload, source, version, is_replay, created_at, updated_at)
        SELECT id, status::"IntentStatus",
               CASE WHEN status = 'CORRECTED' THEN payload || '{"adjusted": true}'::jsonb ELSE payload END,
               source, cardinality(steps), false, created_at, created_at + age
        FROM seed_large`;
      await tx.$executeRaw`
        INSERT INTO audit_events (intent_id, action, actor, to_status, version_after, details, at)
        SELECT id, 'created', 'seed:large', 'RECEIVED', 0, jsonb_build_object('source', source), created_at FROM seed_large`;
      await tx.$executeRaw`
        INSERT INTO audit_events (intent_id, action, actor, from_status, to_status, version_before, version_after, details, at)
        SELECT s.id,
               CASE WHEN p.step = 'CORRECTED' THEN 'correction' ELSE 'status_change' END,
               CASE WHEN p.step = 'CORRECTED' THEN 'seed:review-desk' ELSE 'seed:large' END,
               coalesce(s.steps[p.n - 1], 'RECEIVED')::"IntentStatus", p.step::"IntentStatus", p.n - 1, p.n,
               CASE WHEN p.step = 'CORRECTED'
                    THEN jsonb_build_object('correctionId', encode(sha256(convert_to(s.id::text || E'\n{"adjusted":true}', 'UTF8')), 'hex'),
                                            'reason', 'Partner confirmed the adjusted amount', 'source', 'review-desk')
                    ELSE 'null'::jsonb END,
               s.created_at + s.age * p.n / cardinality(s.steps)
        FROM seed_large s CROSS JOIN LATERAL unnest(s.steps) WITH ORDINALITY AS p(step, n)`;
      const corrections = await tx.$executeRaw`
        INSERT INTO corrections (intent_id, correction_id, diff, source, reason, actor, version_before, version_after, status_before, status_after, created_at)
        SELECT id, encode(sha256(convert_to(id::text || E'\n{"adjusted":true}', 'UTF8')), 'hex'), '{"adjusted": true}'::jsonb,
               'review-desk', 'Partner confirmed the adjusted amount', 'seed:review-desk', 2, 3, 'PROCESSED', 'CORRECTED', created_at + age
        FROM seed_large WHERE status = 'CORRECTED'`;
      const audit = await tx.$queryRaw<{ n: bigint }[]>`SELECT count(*) + sum(cardinality(steps)) AS n FROM seed_large`;
      return { intents, corrections, auditEvents: Number(audit[0].n) };
    },
    // A million intents with their audit trail take minutes on an idle machine and several times that on a busy one.
    { timeout: 60 * 60_000, maxWait: 60_000 },
  );
  // Fresh statistics and visibility map: the planner picks the list indexes and counts run as index-only scans.
  await db().$executeRaw`VACUUM ANALYZE intents`;
  await db().$executeRaw`VACUUM ANALYZE audit_events`;
  await db().$executeRaw`VACUUM ANALYZE corrections`;
  return { ...result, ms: Math.round(performance.now() - started) };
}
