-- CreateTable
CREATE TABLE "intent_status_totals" (
    "is_replay" BOOLEAN NOT NULL,
    "status" "IntentStatus" NOT NULL,
    "n" BIGINT NOT NULL,

    CONSTRAINT "intent_status_totals_pkey" PRIMARY KEY ("is_replay","status")
);

-- CreateTable
CREATE TABLE "intent_status_deltas" (
    "is_replay" BOOLEAN NOT NULL,
    "status" "IntentStatus" NOT NULL,
    "n" BIGINT NOT NULL
);


-- Hand-written: per-status counts kept by the database itself, so the console reads six numbers instead of counting
-- every row (lib/counts/status-counts.ts).
--
-- Why two tables: every change of a status appends a row to intent_status_deltas (-1 for the old status, +1 for the
-- new one) in the statement that changes it, so the counts are exact and commit or roll back with the change. An
-- append never waits for anyone: there is no shared counter row that 2,000 updates a second would queue on, and no
-- lock order that could deadlock. A fold (bridge_fold_status_deltas, run every couple of seconds by each console
-- instance) moves the deltas into intent_status_totals in one transaction, so a reader that sums both tables in one
-- snapshot always gets the exact count, whether the fold ran before its snapshot or not. The deltas table has no
-- index on purpose: it is only ever read whole, and an index would cost every status update one more write.

-- A status update (or a change of is_replay) appends two deltas. Row-level with a WHEN clause, so updates that leave
-- both columns alone (a correction keeping its status, a version bump) never call the function at all.
CREATE FUNCTION "bridge_status_delta_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "intent_status_deltas" ("is_replay", "status", "n")
  VALUES (OLD."is_replay", OLD."status", -1), (NEW."is_replay", NEW."status", 1);
  RETURN NULL;
END $$;
CREATE TRIGGER "intents_status_delta_update" AFTER UPDATE OF "status", "is_replay" ON "intents"
  FOR EACH ROW WHEN (OLD."status" IS DISTINCT FROM NEW."status" OR OLD."is_replay" IS DISTINCT FROM NEW."is_replay")
  EXECUTE FUNCTION "bridge_status_delta_update"();

-- Inserts and deletes: once per statement, one delta per status, so a set-based insert of a million rows (the
-- large seed) appends six rows, not a million.
CREATE FUNCTION "bridge_status_delta_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "intent_status_deltas" ("is_replay", "status", "n")
  SELECT "is_replay", "status", count(*) FROM new_rows GROUP BY 1, 2;
  RETURN NULL;
END $$;
CREATE TRIGGER "intents_status_delta_insert" AFTER INSERT ON "intents"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "bridge_status_delta_insert"();

CREATE FUNCTION "bridge_status_delta_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "intent_status_deltas" ("is_replay", "status", "n")
  SELECT "is_replay", "status", -count(*) FROM old_rows GROUP BY 1, 2;
  RETURN NULL;
END $$;
CREATE TRIGGER "intents_status_delta_delete" AFTER DELETE ON "intents"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "bridge_status_delta_delete"();

-- TRUNCATE fires no row or statement triggers of the other kinds: start the counts from zero with it.
CREATE FUNCTION "bridge_status_counts_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "intent_status_deltas";
  DELETE FROM "intent_status_totals";
  RETURN NULL;
END $$;
CREATE TRIGGER "intents_status_counts_truncate" AFTER TRUNCATE ON "intents"
  FOR EACH STATEMENT EXECUTE FUNCTION "bridge_status_counts_truncate"();

-- The fold: deltas into totals, in one transaction. One fold at a time (a second caller returns at once instead of
-- queueing behind the first); deltas of transactions still running stay for the next fold. Returns how many delta
-- rows it folded.
CREATE FUNCTION "bridge_fold_status_deltas"() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  folded bigint;
BEGIN
  IF NOT pg_try_advisory_xact_lock(7365626572) THEN
    RETURN 0;
  END IF;
  WITH gone AS (
    DELETE FROM "intent_status_deltas" RETURNING "is_replay", "status", "n"
  ), sums AS (
    SELECT "is_replay", "status", sum("n") AS n, count(*) AS rows FROM gone GROUP BY 1, 2
  ), totals AS (
    INSERT INTO "intent_status_totals" AS t ("is_replay", "status", "n")
    SELECT "is_replay", "status", n FROM sums ORDER BY 1, 2
    ON CONFLICT ("is_replay", "status") DO UPDATE SET "n" = t."n" + EXCLUDED."n"
  )
  SELECT coalesce(sum(rows), 0) INTO folded FROM sums;
  RETURN folded;
END $$;

-- The intents already there: counted once, while no write can slip in between the count and the triggers (the
-- lock is held until this migration commits).
LOCK TABLE "intents" IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO "intent_status_totals" ("is_replay", "status", "n")
SELECT "is_replay", "status", count(*) FROM "intents" GROUP BY 1, 2;
