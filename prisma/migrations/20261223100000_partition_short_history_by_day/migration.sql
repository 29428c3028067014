-- lease_events, intent_engine_events and intent_outcome_minutes become range-partitioned by day (UTC) on their time
-- (docs/SCALE.md, "Partitioned history"). They are kept for days, not months: retention now detaches and drops whole
-- days instead of deleting rows in batches, and a day partition keeps at most a day more than asked. Each table is
-- rebuilt in place as audit_events was, in this migration's one transaction: renamed, a partitioned table with the
-- same columns, defaults, checks, triggers and indexes created under its name, every row copied, the old table
-- dropped. Writers wait on the renames' locks until the commit.
--
-- A partitioned table's primary key must contain the partition key: the two with an id take (id, at); ids still come
-- from their one sequence, which the new table takes over, so they stay unique, and nothing references them.
-- intent_outcome_minutes' key already holds its minute, so its upserts (ON CONFLICT on that key) work unchanged.

-- One partition per day (UTC) from the day of `from_at` to the day of `to_at`, then a catch-all from the day after
-- to the end of time, so a write never lacks a partition. From then on housekeeping keeps creating the days ahead
-- (bridge_partitions_maintain in prisma/functions/70_partitions.sql, which is applied after the migrations, so this
-- migration carries its own small helper, dropped at its end).
CREATE FUNCTION pg_temp.day_partitions(parent text, from_at timestamptz, to_at timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  d timestamp := date_trunc('day', from_at AT TIME ZONE 'UTC');
BEGIN
  WHILE d <= date_trunc('day', to_at AT TIME ZONE 'UTC') LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                   parent || '_p' || to_char(d, 'YYYY_MM_DD'), parent, d AT TIME ZONE 'UTC', (d + interval '1 day') AT TIME ZONE 'UTC');
    d := d + interval '1 day';
  END LOOP;
  EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (MAXVALUE)', parent || '_future', parent, d AT TIME ZONE 'UTC');
END $$;

-- ── lease_events ──────────────────────────────────────────────────────────────────────────────────────────────────

ALTER TABLE "lease_events" RENAME TO "lease_events_unpartitioned";
ALTER TABLE "lease_events_unpartitioned" RENAME CONSTRAINT "lease_events_pkey" TO "lease_events_unpartitioned_pkey";
DROP INDEX "lease_events_resource_idx", "lease_events_at_idx";
ALTER SEQUENCE "lease_events_id_seq" OWNED BY NONE;

CREATE TABLE "lease_events" (
    "id" BIGINT NOT NULL DEFAULT nextval('lease_events_id_seq'::regclass),
    "resource" TEXT NOT NULL,
    "backend" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "owner" TEXT,
    "holder" TEXT,
    "token" BIGINT,
    "expires_at" TIMESTAMPTZ(3),
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT clock_timestamp(),
    "actor" TEXT,
    "write_seq" BIGINT DEFAULT nextval('bridge_write_seq'::regclass),

    CONSTRAINT "lease_events_pkey" PRIMARY KEY ("id", "at"),
    CONSTRAINT "lease_events_backend_check" CHECK ("backend" = ANY (ARRAY['postgres'::text, 'redis'::text])),
    CONSTRAINT "lease_events_event_check" CHECK ("event" = ANY (ARRAY['acquired'::text, 'denied'::text, 'refreshed'::text, 'released'::text, 'expired'::text]))
) PARTITION BY RANGE ("at");
ALTER SEQUENCE "lease_events_id_seq" OWNED BY "lease_events"."id";

SELECT pg_temp.day_partitions('lease_events', least((SELECT min("at") FROM "lease_events_unpartitioned"), now() - interval '1 day'),
                              greatest((SELECT max("at") FROM "lease_events_unpartitioned"), now()) + interval '7 days');

-- Copied before any trigger exists on the new table: the copies must not be sent to the outbox again.
INSERT INTO "lease_events" ("id", "resource", "backend", "event", "owner", "holder", "token", "expires_at", "at", "actor", "write_seq")
SELECT "id", "resource", "backend", "event", "owner", "holder", "token", "expires_at", "at", "actor", "write_seq"
FROM "lease_events_unpartitioned";

CREATE INDEX "lease_events_resource_idx" ON "lease_events" ("resource", "id");
CREATE INDEX "lease_events_at_idx" ON "lease_events" ("at");
CREATE TRIGGER "lease_events_outbox" AFTER INSERT ON "lease_events"
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION "bridge_outbox_from_lease_events"();
DROP TABLE "lease_events_unpartitioned";

-- ── intent_engine_events ──────────────────────────────────────────────────────────────────────────────────────────

ALTER TABLE "intent_engine_events" RENAME TO "intent_engine_events_unpartitioned";
ALTER TABLE "intent_engine_events_unpartitioned" RENAME CONSTRAINT "intent_engine_events_pkey" TO "intent_engine_events_unpartitioned_pkey";
DROP INDEX "intent_engine_events_intent_idx", "intent_engine_events_at_idx";
ALTER SEQUENCE "intent_engine_events_id_seq" OWNED BY NONE;

CREATE TABLE "intent_engine_events" (
    "id" BIGINT NOT NULL DEFAULT nextval('intent_engine_events_id_seq'::regclass),
    "intent_id" UUID NOT NULL,
    "kind" VARCHAR(32) NOT NULL,
    "operation" VARCHAR(64) NOT NULL,
    "actor" VARCHAR(255),
    "waited_ms" DOUBLE PRECISION,
    "outcome" VARCHAR(16),
    "holder_pid" INTEGER,
    "details" JSONB,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "write_seq" BIGINT DEFAULT nextval('bridge_write_seq'::regclass),

    CONSTRAINT "intent_engine_events_pkey" PRIMARY KEY ("id", "at")
) PARTITION BY RANGE ("at");
ALTER SEQUENCE "intent_engine_events_id_seq" OWNED BY "intent_engine_events"."id";

SELECT pg_temp.day_partitions('intent_engine_events', least((SELECT min("at") FROM "intent_engine_events_unpartitioned"), now() - interval '1 day'),
                              greatest((SELECT max("at") FROM "intent_engine_events_unpartitioned"), now()) + interval '7 days');

INSERT INTO "intent_engine_events" ("id", "intent_id", "kind", "operation", "actor", "waited_ms", "outcome", "holder_pid", "details", "at", "write_seq")
SELECT "id", "intent_id", "kind", "operation", "actor", "waited_ms", "outcome", "holder_pid", "details", "at", "write_seq"
FROM "intent_engine_events_unpartitioned";

CREATE INDEX "intent_engine_events_intent_idx" ON "intent_engine_events" ("intent_id", "id");
CREATE INDEX "intent_engine_events_at_idx" ON "intent_engine_events" ("at");
DROP TABLE "intent_engine_events_unpartitioned";

-- ── intent_outcome_minutes ────────────────────────────────────────────────────────────────────────────────────────

ALTER TABLE "intent_outcome_minutes" RENAME TO "intent_outcome_minutes_unpartitioned";
ALTER TABLE "intent_outcome_minutes_unpartitioned" RENAME CONSTRAINT "intent_outcome_minutes_pkey" TO "intent_outcome_minutes_unpartitioned_pkey";
DROP INDEX "intent_outcome_minutes_minute_idx";

CREATE TABLE "intent_outcome_minutes" (
    "outcome" VARCHAR(64) NOT NULL,
    "minute" TIMESTAMPTZ(0) NOT NULL,
    "operation" VARCHAR(64) NOT NULL,
    "intent_id" UUID NOT NULL,
    "count" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "intent_outcome_minutes_pkey" PRIMARY KEY ("outcome", "minute", "operation", "intent_id")
) PARTITION BY RANGE ("minute");

SELECT pg_temp.day_partitions('intent_outcome_minutes', least((SELECT min("minute") FROM "intent_outcome_minutes_unpartitioned"), now() - interval '1 day'),
                              greatest((SELECT max("minute") FROM "intent_outcome_minutes_unpartitioned"), now()) + interval '7 days');

INSERT INTO "intent_outcome_minutes" ("outcome", "minute", "operation", "intent_id", "count")
SELECT "outcome", "minute", "operation", "intent_id", "count" FROM "intent_outcome_minutes_unpartitioned";

CREATE INDEX "intent_outcome_minutes_minute_idx" ON "intent_outcome_minutes" ("minute");
DROP TABLE "intent_outcome_minutes_unpartitioned";

ANALYZE "lease_events", "intent_engine_events", "intent_outcome_minutes";
DROP FUNCTION pg_temp.day_partitions(text, timestamptz, timestamptz);
