-- The lock history becomes range-partitioned by day (UTC) on when each episode started (docs/SCALE.md,
-- "Partitioned history"): retention detaches and drops whole days instead of deleting episodes in batches. Rebuilt in
-- place, in this migration's one transaction, as the other history tables were.
--
-- The samples and intents of an episode reference it by foreign key. A foreign key to a partitioned table must name
-- a unique key of it, and that key must contain the partition key: the episodes' key becomes (id, started_at), and
-- the samples and intents carry their episode's start (episode_started_at) beside its id and reference both. They
-- are partitioned on that start too, in the same days, so an episode's samples and intents live in the day partition
-- that matches its own: a day of episodes retires together with its samples and intents (theirs first; see
-- bridge_partitions_retire), and the foreign keys still guarantee that no sample or intent outlives its episode.
--
-- At most one episode in progress per root blocker's transaction was a partial unique index on the root's key. On a
-- partitioned table a unique index must contain the start too, and would then only hold within a day: a trigger
-- holds the rule instead, for the whole table (lock_episodes_one_open_per_root below).

-- One partition per day (UTC) from the day of `from_at` to the day of `to_at`, then a catch-all from the day after
-- (the same helper as the migration before this one's, dropped at the end).
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

-- The days every table of the history gets: the same for all four, so an episode's rows share a day partition.
CREATE TEMPORARY TABLE lock_history_days AS
SELECT least((SELECT min("started_at") FROM "lock_episodes"), (SELECT min("minute") FROM "lock_episode_storms"), now() - interval '1 day') AS from_at,
       greatest((SELECT max("started_at") FROM "lock_episodes"), (SELECT max("minute") FROM "lock_episode_storms"), now()) + interval '7 days' AS to_at;

ALTER TABLE "lock_episode_intents" RENAME TO "lock_episode_intents_unpartitioned";
ALTER TABLE "lock_episode_intents_unpartitioned" RENAME CONSTRAINT "lock_episode_intents_pkey" TO "lock_episode_intents_unpartitioned_pkey";
ALTER TABLE "lock_episode_intents_unpartitioned" DROP CONSTRAINT "lock_episode_intents_episode_fkey";
DROP INDEX "lock_episode_intents_episode_idx";
ALTER TABLE "lock_episode_samples" RENAME TO "lock_episode_samples_unpartitioned";
ALTER TABLE "lock_episode_samples_unpartitioned" RENAME CONSTRAINT "lock_episode_samples_pkey" TO "lock_episode_samples_unpartitioned_pkey";
ALTER TABLE "lock_episode_samples_unpartitioned" DROP CONSTRAINT "lock_episode_samples_episode_fkey";
ALTER TABLE "lock_episodes" RENAME TO "lock_episodes_unpartitioned";
ALTER TABLE "lock_episodes_unpartitioned" RENAME CONSTRAINT "lock_episodes_pkey" TO "lock_episodes_unpartitioned_pkey";
DROP INDEX "lock_episodes_open_root_key", "lock_episodes_root_idx", "lock_episodes_started_idx", "lock_episodes_open_idx", "lock_episodes_ended_idx";
ALTER SEQUENCE "lock_episodes_id_seq" OWNED BY NONE;
ALTER TABLE "lock_episode_storms" RENAME TO "lock_episode_storms_unpartitioned";
ALTER TABLE "lock_episode_storms_unpartitioned" RENAME CONSTRAINT "lock_episode_storms_pkey" TO "lock_episode_storms_unpartitioned_pkey";

-- ── lock_episodes ─────────────────────────────────────────────────────────────────────────────────────────────────

CREATE TABLE "lock_episodes" (
    "id" BIGINT NOT NULL DEFAULT nextval('lock_episodes_id_seq'::regclass),
    "root_pid" INTEGER NOT NULL,
    "root_backend_start" TIMESTAMPTZ(6) NOT NULL,
    -- NULL for a root that holds a session-level lock outside any transaction.
    "root_xact_start" TIMESTAMPTZ(6),
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL,
    "ended_at" TIMESTAMPTZ(3),
    "samples" INTEGER NOT NULL DEFAULT 1,
    "peak_waiters" INTEGER NOT NULL,
    "peak_at" TIMESTAMPTZ(3) NOT NULL,
    "peak_tree" JSONB NOT NULL,
    "root" JSONB NOT NULL,
    "waiters" JSONB NOT NULL DEFAULT '[]',
    "locks" JSONB NOT NULL DEFAULT '[]',
    "intent_ids" UUID[] NOT NULL DEFAULT '{}',
    "applications" TEXT[] NOT NULL DEFAULT '{}',
    "write_seq" BIGINT DEFAULT nextval('bridge_write_seq'::regclass),

    CONSTRAINT "lock_episodes_pkey" PRIMARY KEY ("id", "started_at")
) PARTITION BY RANGE ("started_at");
ALTER SEQUENCE "lock_episodes_id_seq" OWNED BY "lock_episodes"."id";
SELECT pg_temp.day_partitions('lock_episodes', from_at, to_at) FROM lock_history_days;

INSERT INTO "lock_episodes" ("id", "root_pid", "root_backend_start", "root_xact_start", "started_at", "last_seen_at", "ended_at",
                             "samples", "peak_waiters", "peak_at", "peak_tree", "root", "waiters", "locks", "intent_ids",
                             "applications", "write_seq")
SELECT "id", "root_pid", "root_backend_start", "root_xact_start", "started_at", "last_seen_at", "ended_at",
       "samples", "peak_waiters", "peak_at", "peak_tree", "root", "waiters", "locks", "intent_ids",
       "applications", "write_seq"
FROM "lock_episodes_unpartitioned";

CREATE INDEX "lock_episodes_root_idx" ON "lock_episodes" ("root_pid", "root_backend_start");
CREATE INDEX "lock_episodes_started_idx" ON "lock_episodes" ("started_at", "id");
CREATE INDEX "lock_episodes_open_idx" ON "lock_episodes" ("id") WHERE "ended_at" IS NULL;
CREATE INDEX "lock_episodes_ended_idx" ON "lock_episodes" ("ended_at");

-- At most one episode in progress per root blocker's transaction: a sampler that takes over continues it instead of
-- opening another; the same transaction blocking again after its episode ended opens a new one. A new episode whose
-- root already has one in progress is not written (the insert reports no row, as ON CONFLICT DO NOTHING did). The
-- check holds under concurrency because inserts for one root wait for each other on a transaction-level advisory
-- lock: the second looks only after the first has committed or rolled back, and its statement sees that outcome.
CREATE FUNCTION "lock_episodes_one_open_per_root"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.ended_at IS NOT NULL THEN
    RETURN NEW;
  END IF;
  -- Keyed on the root's numbers, not on timestamps as text (which would follow each session's time zone).
  PERFORM pg_advisory_xact_lock(hashtext('lock_episodes_open_root'),
    hashtext(NEW.root_pid || '/' || extract(epoch FROM NEW.root_backend_start) || '/' || coalesce(extract(epoch FROM NEW.root_xact_start)::text, '')));
  IF EXISTS (SELECT 1 FROM "lock_episodes" e
             WHERE e.root_pid = NEW.root_pid AND e.root_backend_start = NEW.root_backend_start
               AND e.root_xact_start IS NOT DISTINCT FROM NEW.root_xact_start AND e.ended_at IS NULL) THEN
    RETURN NULL;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "lock_episodes_one_open_per_root" BEFORE INSERT ON "lock_episodes"
  FOR EACH ROW EXECUTE FUNCTION "lock_episodes_one_open_per_root"();

-- ── lock_episode_samples and lock_episode_intents: partitioned on their episode's start ───────────────────────────

CREATE TABLE "lock_episode_samples" (
    "episode_id" BIGINT NOT NULL,
    "episode_started_at" TIMESTAMPTZ(3) NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "waiters" INTEGER NOT NULL,
    "tree" JSONB NOT NULL,

    CONSTRAINT "lock_episode_samples_pkey" PRIMARY KEY ("episode_id", "at", "episode_started_at"),
    CONSTRAINT "lock_episode_samples_episode_fkey" FOREIGN KEY ("episode_id", "episode_started_at")
      REFERENCES "lock_episodes"("id", "started_at") ON DELETE CASCADE
) PARTITION BY RANGE ("episode_started_at");
SELECT pg_temp.day_partitions('lock_episode_samples', from_at, to_at) FROM lock_history_days;

INSERT INTO "lock_episode_samples" ("episode_id", "episode_started_at", "at", "waiters", "tree")
SELECT s."episode_id", e."started_at", s."at", s."waiters", s."tree"
FROM "lock_episode_samples_unpartitioned" s JOIN "lock_episodes_unpartitioned" e ON e."id" = s."episode_id";

CREATE TABLE "lock_episode_intents" (
    "intent_id" UUID NOT NULL,
    "episode_id" BIGINT NOT NULL,
    "episode_started_at" TIMESTAMPTZ(3) NOT NULL,
    "role" VARCHAR(8) NOT NULL,

    CONSTRAINT "lock_episode_intents_pkey" PRIMARY KEY ("intent_id", "episode_id", "role", "episode_started_at"),
    CONSTRAINT "lock_episode_intents_episode_fkey" FOREIGN KEY ("episode_id", "episode_started_at")
      REFERENCES "lock_episodes"("id", "started_at") ON DELETE CASCADE
) PARTITION BY RANGE ("episode_started_at");
SELECT pg_temp.day_partitions('lock_episode_intents', from_at, to_at) FROM lock_history_days;

INSERT INTO "lock_episode_intents" ("intent_id", "episode_id", "episode_started_at", "role")
SELECT i."intent_id", i."episode_id", e."started_at", i."role"
FROM "lock_episode_intents_unpartitioned" i JOIN "lock_episodes_unpartitioned" e ON e."id" = i."episode_id";

CREATE INDEX "lock_episode_intents_episode_idx" ON "lock_episode_intents" ("episode_id");

-- ── lock_episode_storms: kept as long as the episodes ─────────────────────────────────────────────────────────────

CREATE TABLE "lock_episode_storms" (
    "minute" TIMESTAMPTZ(0) NOT NULL,
    "episodes" INTEGER NOT NULL DEFAULT 0,
    "peak_waiters" INTEGER NOT NULL DEFAULT 0,
    "applications" TEXT[] NOT NULL DEFAULT '{}',

    CONSTRAINT "lock_episode_storms_pkey" PRIMARY KEY ("minute")
) PARTITION BY RANGE ("minute");
SELECT pg_temp.day_partitions('lock_episode_storms', from_at, to_at) FROM lock_history_days;
INSERT INTO "lock_episode_storms" ("minute", "episodes", "peak_waiters", "applications")
SELECT "minute", "episodes", "peak_waiters", "applications" FROM "lock_episode_storms_unpartitioned";

DROP TABLE "lock_episode_intents_unpartitioned", "lock_episode_samples_unpartitioned", "lock_episodes_unpartitioned", "lock_episode_storms_unpartitioned";
ANALYZE "lock_episodes", "lock_episode_samples", "lock_episode_intents", "lock_episode_storms";
DROP TABLE lock_history_days;
DROP FUNCTION pg_temp.day_partitions(text, timestamptz, timestamptz);
