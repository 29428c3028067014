-- Hand-written: the transactional outbox (lib/events). Every change other services care about writes a row here in
-- the transaction that makes the change, so an event exists exactly when its change committed; relays publish the
-- rows to NATS JetStream afterwards and mark them published only once JetStream acknowledged them.

CREATE TABLE "outbox_events" (
    "id" BIGSERIAL NOT NULL,
    "subject" VARCHAR(128) NOT NULL,
    -- Whose events must stay in order (an intent id, a lock's resource): one relay at a time publishes a key's
    -- events, in id order, each only after the one before it was acknowledged.
    "ordering_key" TEXT NOT NULL,
    -- Which relay partition the key belongs to (bridge_outbox_partition): relays share partitions, never keys.
    "partition" SMALLINT NOT NULL,
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "published_at" TIMESTAMPTZ(3),
    -- JetStream's sequence number for the message, as the publish acknowledgement gave it.
    "stream_seq" BIGINT,
    CONSTRAINT "outbox_events_pkey" PRIMARY KEY ("id")
);

-- What the relays read: the unpublished rows of their partitions, oldest first. Small, since rows leave it once published.
CREATE INDEX "outbox_events_unpublished_idx" ON "outbox_events" ("partition", "id") WHERE "published_at" IS NULL;
-- What the retention purge reads.
CREATE INDEX "outbox_events_published_idx" ON "outbox_events" ("published_at") WHERE "published_at" IS NOT NULL;

-- The relays' partitions: a key's partition never changes, so one relay at a time owns all of a key's events.
CREATE FUNCTION "bridge_outbox_partition"(p_key text) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT (hashtext(p_key) & 15)::smallint $$;

-- The payload builder: every event is this versioned envelope (docs/EVENTS.md, lib/events/payloads.ts).
-- `data` is what changed, per subject; the relay adds the outbox id as "id" when it publishes.
CREATE FUNCTION "bridge_outbox_payload"(
  p_subject text, p_actor text, p_data jsonb, p_intent_id uuid, p_version integer, p_at timestamptz
) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'specVersion', 1,
    'type', p_subject,
    'occurredAt', to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'intentId', p_intent_id,
    'version', p_version,
    'actor', p_actor,
    'data', coalesce(p_data, '{}'::jsonb))
$$;

-- For every writer of events (the triggers below, the lease manager, the pipeline): call it in the transaction that
-- makes the change. Returns the outbox id (the message id other services deduplicate on).
CREATE FUNCTION "bridge_outbox_emit"(
  p_subject text, p_ordering_key text, p_actor text, p_data jsonb,
  p_intent_id uuid DEFAULT NULL, p_version integer DEFAULT NULL, p_at timestamptz DEFAULT now()
) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
  INSERT INTO "outbox_events" ("subject", "ordering_key", "partition", "payload")
  VALUES (p_subject, p_ordering_key, "bridge_outbox_partition"(p_ordering_key),
          "bridge_outbox_payload"(p_subject, p_actor, p_data, p_intent_id, p_version, p_at))
  RETURNING "id"
$$;

-- Fed from the tables of record, so no code path of the engine can change an intent without its event.
-- Statement-level triggers with transition tables: a bulk update writes its events in one INSERT, in audit order
-- (which, for one intent, is version order). Rows of the contention replay's synthetic intents are left out:
-- other services must not receive load-test traffic.

-- Intents created and status changes (whatever the door or the action name: any audit row that moves the status
-- other than a correction, which has its own event with the diff).
CREATE FUNCTION "bridge_outbox_from_audit"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "outbox_events" ("subject", "ordering_key", "partition", "payload")
  SELECT e.subject, a."intent_id"::text, "bridge_outbox_partition"(a."intent_id"::text),
         "bridge_outbox_payload"(e.subject, a."actor", e.data, a."intent_id", a."version_after", a."at")
  FROM inserted a
  JOIN "intents" i ON i."id" = a."intent_id" AND NOT i."is_replay"
  CROSS JOIN LATERAL (
    SELECT CASE
             WHEN a."action" = 'created' THEN 'evt.intent.created'
             WHEN a."action" <> 'correction' AND a."from_status" IS NOT NULL AND a."from_status" IS DISTINCT FROM a."to_status" THEN 'evt.intent.status_changed'
           END AS subject,
           CASE
             WHEN a."action" = 'created' THEN jsonb_build_object('status', a."to_status", 'source', i."source", 'payload', i."payload")
             ELSE jsonb_build_object('from', a."from_status", 'to', a."to_status", 'versionBefore', a."version_before",
                                     'action', a."action",
                                     'reason', CASE WHEN jsonb_typeof(a."details") = 'object' THEN a."details" ->> 'reason' END)
           END AS data
  ) e
  WHERE e.subject IS NOT NULL
  ORDER BY a."id";
  RETURN NULL;
END $$;

CREATE TRIGGER "audit_events_outbox" AFTER INSERT ON "audit_events"
REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION "bridge_outbox_from_audit"();

-- Corrections, with the diff that was merged.
CREATE FUNCTION "bridge_outbox_from_corrections"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "outbox_events" ("subject", "ordering_key", "partition", "payload")
  SELECT 'evt.intent.corrected', c."intent_id"::text, "bridge_outbox_partition"(c."intent_id"::text),
         "bridge_outbox_payload"('evt.intent.corrected', c."actor",
           jsonb_build_object('correctionId', c."correction_id", 'diff', c."diff", 'source', c."source", 'reason', c."reason",
                              'metadata', c."metadata", 'from', c."status_before", 'to', c."status_after",
                              'versionBefore', c."version_before"),
           c."intent_id", c."version_after", c."created_at")
  FROM inserted c
  JOIN "intents" i ON i."id" = c."intent_id" AND NOT i."is_replay"
  ORDER BY c."id";
  RETURN NULL;
END $$;

CREATE TRIGGER "corrections_outbox" AFTER INSERT ON "corrections"
REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION "bridge_outbox_from_corrections"();

-- Refused commands: the caller's expectedVersion no longer matched (the persisted conflict event).
CREATE FUNCTION "bridge_outbox_from_conflicts"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "outbox_events" ("subject", "ordering_key", "partition", "payload")
  SELECT 'evt.intent.conflict', c."intent_id"::text, "bridge_outbox_partition"(c."intent_id"::text),
         "bridge_outbox_payload"('evt.intent.conflict', c."actor",
           jsonb_build_object('operation', c."operation", 'expectedVersion', c."expected_version",
                              'currentVersion', c."current_version", 'reason', c."reason"),
           c."intent_id", c."current_version", c."at")
  FROM inserted c
  JOIN "intents" i ON i."id" = c."intent_id" AND NOT i."is_replay"
  ORDER BY c."id";
  RETURN NULL;
END $$;

CREATE TRIGGER "conflict_events_outbox" AFTER INSERT ON "conflict_events"
REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION "bridge_outbox_from_conflicts"();
