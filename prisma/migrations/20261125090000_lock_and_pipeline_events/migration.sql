-- Hand-written: lease events and finished pipeline runs reach the outbox too, written in the transaction that records
-- them, so other services hear about locks (evt.lock.*) and pipeline runs (evt.intent.pipeline_finished) with the
-- same at-least-once guarantee as intent changes. Both backends record their lease events in Postgres, so one
-- trigger covers Postgres and Redis leases alike.

-- An ISO-8601 UTC timestamp with milliseconds, the format every event payload uses.
CREATE FUNCTION "bridge_iso_utc"(p_at timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

-- Lease events, keyed by the resource (one resource's events stay in order). A refresh is not published: it changes
-- nothing another service acts on, and it is by far the most frequent event.
CREATE FUNCTION "bridge_outbox_from_lease_events"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "outbox_events" ("subject", "ordering_key", "partition", "payload")
  SELECT 'evt.lock.' || e."event", e."resource", "bridge_outbox_partition"(e."resource"),
         "bridge_outbox_payload"('evt.lock.' || e."event", e."owner",
           CASE e."event"
             WHEN 'acquired' THEN jsonb_build_object('resourceId', e."resource", 'ownerId', e."owner",
                                                     'expiresAt', "bridge_iso_utc"(e."expires_at"), 'fencingToken', e."token",
                                                     'backend', e."backend")
             WHEN 'denied' THEN jsonb_build_object('resourceId', e."resource", 'requestedBy', e."owner",
                                                   'currentOwner', e."holder", 'reason', 'held',
                                                   'heldUntil', "bridge_iso_utc"(e."expires_at"), 'backend', e."backend")
             ELSE jsonb_build_object('resourceId', e."resource", 'ownerId', e."owner", 'fencingToken', e."token",
                                     'backend', e."backend")
           END,
           NULL, CASE WHEN e."event" = 'denied' THEN NULL ELSE e."token"::integer END, e."at")
  FROM inserted e
  WHERE e."event" IN ('acquired', 'denied', 'released', 'expired')
  ORDER BY e."id";
  RETURN NULL;
END $$;

CREATE TRIGGER "lease_events_outbox" AFTER INSERT ON "lease_events"
REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION "bridge_outbox_from_lease_events"();

-- Intents created, status changes, and now finished pipeline runs (an audit row with action 'pipeline_finished'
-- and the run in its details). The rest is unchanged from the outbox migration.
CREATE OR REPLACE FUNCTION "bridge_outbox_from_audit"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "outbox_events" ("subject", "ordering_key", "partition", "payload")
  SELECT e.subject, a."intent_id"::text, "bridge_outbox_partition"(a."intent_id"::text),
         "bridge_outbox_payload"(e.subject, a."actor", e.data, a."intent_id", coalesce(a."version_after", i."version"), a."at")
  FROM inserted a
  JOIN "intents" i ON i."id" = a."intent_id" AND NOT i."is_replay"
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
