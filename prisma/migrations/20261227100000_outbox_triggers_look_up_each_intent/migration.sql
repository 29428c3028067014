-- The outbox triggers read the intent of each inserted row (its version, its payload for `created`, and whether it
-- belongs to a replay, whose events never go out). They joined the inserted rows to "intents", and a trigger's plan is
-- made once per session from the size of the first batch it saw: a statement that wrote many rows, or a small table,
-- left a plan that hashes the whole "intents" table, and every later insert in that session read all of it again to
-- find a few intents (seen as most of the cost of a worker's run close on a table of ten thousand intents). Each row
-- now looks up its own intent by primary key (a LATERAL subquery kept apart by OFFSET 0, or a scalar subquery), so a
-- statement costs an index probe per row it wrote, whatever the table's size and whatever plan the session made first.
CREATE OR REPLACE FUNCTION "bridge_outbox_from_audit"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "outbox_events" ("subject", "ordering_key", "partition", "payload")
  SELECT e.subject, a."intent_id"::text, "bridge_outbox_partition"(a."intent_id"::text),
         "bridge_outbox_payload"(e.subject, a."actor", e.data, a."intent_id", coalesce(a."version_after", i."version"), a."at")
  FROM inserted a
  CROSS JOIN LATERAL (
    SELECT x."version", x."source", x."payload", x."status" FROM "intents" x WHERE x."id" = a."intent_id" AND NOT x."is_replay" OFFSET 0
  ) i
  CROSS JOIN LATERAL (
    SELECT CASE
             WHEN a."action" = 'created' THEN 'evt.intent.created'
             WHEN a."action" = 'pipeline_finished' THEN 'evt.intent.pipeline_finished'
             WHEN a."action" <> 'correction' AND a."from_status" IS NOT NULL AND a."from_status" IS DISTINCT FROM a."to_status" THEN 'evt.intent.status_changed'
           END AS subject,
           CASE
             WHEN a."action" = 'created' THEN jsonb_build_object('status', a."to_status", 'source', i."source", 'payload', i."payload")
             WHEN a."action" = 'pipeline_finished' THEN jsonb_strip_nulls(jsonb_build_object(
               'outcome', a."details" ->> 'status', 'runId', a."details" ->> 'runId', 'error', a."details" ->> 'error',
               'status', i."status"))
             ELSE jsonb_build_object('from', a."from_status", 'to', a."to_status", 'versionBefore', a."version_before",
                                     'action', a."action",
                                     'reason', CASE WHEN jsonb_typeof(a."details") = 'object' THEN a."details" ->> 'reason' END)
           END AS data
  ) e
  WHERE e.subject IS NOT NULL
  ORDER BY a."id";
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "bridge_outbox_from_corrections"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "outbox_events" ("subject", "ordering_key", "partition", "payload")
  SELECT 'evt.intent.corrected', c."intent_id"::text, "bridge_outbox_partition"(c."intent_id"::text),
         "bridge_outbox_payload"('evt.intent.corrected', c."actor",
           jsonb_build_object('correctionId', c."correction_id", 'diff', c."diff", 'source', c."source", 'reason', c."reason",
                              'metadata', c."metadata", 'from', c."status_before", 'to', c."status_after",
                              'versionBefore', c."version_before"),
           c."intent_id", c."version_after", c."created_at")
  FROM inserted c
  WHERE (SELECT NOT i."is_replay" FROM "intents" i WHERE i."id" = c."intent_id")
  ORDER BY c."id";
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "bridge_outbox_from_conflicts"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "outbox_events" ("subject", "ordering_key", "partition", "payload")
  SELECT 'evt.intent.conflict', c."intent_id"::text, "bridge_outbox_partition"(c."intent_id"::text),
         "bridge_outbox_payload"('evt.intent.conflict', c."actor",
           jsonb_build_object('operation', c."operation", 'expectedVersion', c."expected_version",
                              'currentVersion', c."current_version", 'reason', c."reason"),
           c."intent_id", c."current_version", c."at")
  FROM inserted c
  WHERE (SELECT NOT i."is_replay" FROM "intents" i WHERE i."id" = c."intent_id")
  ORDER BY c."id";
  RETURN NULL;
END $$;
