-- audit_events becomes range-partitioned by month on "at" (docs/SCALE.md, "Partitioned history"): old months can
-- then be detached and dropped (or archived) whole instead of deleted row by row, and every read bounded in time
-- touches only its months. The table is rebuilt in place, in this migration's one transaction: renamed, a
-- partitioned table with the same columns, defaults, triggers and indexes created under its name, every row copied,
-- the old table dropped. Writers wait on the rename's lock for as long as that takes, which grows with the table
-- (docs/bench/2026-11-27-partitioning.md).
--
-- A partitioned table's primary key must contain the partition key: it is (id, at). Nothing references
-- audit_events.id by foreign key, and ids stay unique as they were: every row draws its id from the same sequence,
-- which the new table takes over.

ALTER TABLE "audit_events" RENAME TO "audit_events_unpartitioned";
ALTER TABLE "audit_events_unpartitioned" RENAME CONSTRAINT "audit_events_pkey" TO "audit_events_unpartitioned_pkey";
ALTER SEQUENCE "audit_events_id_seq" OWNED BY NONE;

CREATE TABLE "audit_events" (
    "id" BIGINT NOT NULL DEFAULT nextval('audit_events_id_seq'::regclass),
    "intent_id" UUID,
    "action" VARCHAR(64) NOT NULL,
    "actor" VARCHAR(255) NOT NULL,
    "from_status" "IntentStatus",
    "to_status" "IntentStatus",
    "version_before" INTEGER,
    "version_after" INTEGER,
    "details" JSONB,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "tx_id" BIGINT NOT NULL DEFAULT ((pg_current_xact_id())::text)::bigint,
    "write_seq" BIGINT DEFAULT nextval('bridge_write_seq'::regclass),

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id", "at")
) PARTITION BY RANGE ("at");
ALTER SEQUENCE "audit_events_id_seq" OWNED BY "audit_events"."id";

-- One partition per month (UTC) from the oldest row's month (or the month before now's, whichever is older) to three
-- months past now, and a catch-all from the month after that to the end of time, so a write never lacks a partition.
-- From then on housekeeping keeps creating the months ahead (bridge_partitions_maintain in
-- prisma/functions/70_partitions.sql; this loop does not call it because the functions are applied after the
-- migrations).
DO $$
DECLARE
  m timestamp := date_trunc('month', least((SELECT min("at") FROM "audit_events_unpartitioned"), now() - interval '1 month') AT TIME ZONE 'UTC');
  stop_at timestamp := date_trunc('month', greatest((SELECT max("at") FROM "audit_events_unpartitioned"), now()) AT TIME ZONE 'UTC') + interval '3 months';
BEGIN
  WHILE m <= stop_at LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF "audit_events" FOR VALUES FROM (%L) TO (%L)',
                   'audit_events_p' || to_char(m, 'YYYY_MM'), m AT TIME ZONE 'UTC', (m + interval '1 month') AT TIME ZONE 'UTC');
    m := m + interval '1 month';
  END LOOP;
  EXECUTE format('CREATE TABLE "audit_events_future" PARTITION OF "audit_events" FOR VALUES FROM (%L) TO (MAXVALUE)', m AT TIME ZONE 'UTC');
END $$;

-- The old indexes go first (their names are taken again below); the new ones are built after the copy, once per
-- partition, which is quicker than maintaining them row by row. No trigger exists on the new table during the copy:
-- the copied rows must not be sent to the outbox again.
DROP INDEX "audit_events_intent_idx", "audit_events_tx_idx", "audit_events_at_id_idx", "audit_events_actor_at_idx",
  "audit_events_action_at_idx", "audit_events_intent_at_idx";

INSERT INTO "audit_events" ("id", "intent_id", "action", "actor", "from_status", "to_status", "version_before",
                            "version_after", "details", "at", "tx_id", "write_seq")
SELECT "id", "intent_id", "action", "actor", "from_status", "to_status", "version_before",
       "version_after", "details", "at", "tx_id", "write_seq"
FROM "audit_events_unpartitioned";

CREATE INDEX "audit_events_intent_idx" ON "audit_events" ("intent_id", "id");
CREATE INDEX "audit_events_tx_idx" ON "audit_events" ("tx_id");
CREATE INDEX "audit_events_at_id_idx" ON "audit_events" ("at", "id");
CREATE INDEX "audit_events_actor_at_idx" ON "audit_events" ("actor", "at", "id");
CREATE INDEX "audit_events_action_at_idx" ON "audit_events" ("action", "at", "id");
CREATE INDEX "audit_events_intent_at_idx" ON "audit_events" ("intent_id", "at", "id");

-- Append-only on every partition: a row trigger on a partitioned table is cloned onto each partition, present and
-- future, so an UPDATE or DELETE aimed at a partition directly is refused too.
CREATE TRIGGER "audit_events_no_update" BEFORE UPDATE OR DELETE ON "audit_events"
  FOR EACH ROW EXECUTE FUNCTION "audit_events_append_only"();
CREATE TRIGGER "audit_events_outbox" AFTER INSERT ON "audit_events"
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION "bridge_outbox_from_audit"();

DROP TABLE "audit_events_unpartitioned";
ANALYZE "audit_events";
