-- Helpers for the other files here. This folder holds the database functions: each file is re-applied (in name
-- order, in one transaction per file) by lib/db/migrate.ts whenever its checksum changes, and recorded in
-- "_bridge_functions", a table of its own so "_prisma_migrations" stays exactly what `prisma migrate deploy` expects.

-- Drops every overload of a function by name, so a file can change its function's parameters and still be re-applied.
CREATE OR REPLACE FUNCTION "bridge_drop_overloads"(p_name text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.proname = p_name AND p.pronamespace = current_schema()::regnamespace LOOP
    EXECUTE format('DROP FUNCTION %s', f);
  END LOOP;
END $$;

-- Labels the backend for the Locks page (bridge:<operation>:<intent id>) and sets this transaction's lock timeout.
CREATE OR REPLACE FUNCTION "bridge_label"(p_operation text, p_intent uuid, p_lock_timeout_ms integer) RETURNS void
LANGUAGE sql AS $$
  SELECT set_config('application_name', left('bridge:' || p_operation || ':' || p_intent::text, 63), true),
         set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
$$;

-- An intent met a version conflict: remembered for a while so every instance's adaptive commands queue on the row
-- lock at once instead of retrying into the same conflict (see docs/LOCKING.md).
CREATE OR REPLACE FUNCTION "bridge_note_contention"(p_intent uuid) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO "intent_contention" ("intent_id", "conflicts", "last_conflict_at") VALUES (p_intent, 1, now())
  ON CONFLICT ("intent_id") DO UPDATE SET "conflicts" = "intent_contention"."conflicts" + 1, "last_conflict_at" = now();
$$;

CREATE OR REPLACE FUNCTION "bridge_recently_contended"(p_intent uuid, p_within_ms integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM "intent_contention" c
                 WHERE c."intent_id" = p_intent AND c."last_conflict_at" > now() - make_interval(secs => p_within_ms / 1000.0));
$$;

-- Stores a keyed command's outcome in its idempotency record, in the statement that did the work. A repeat replays
-- the outcome through the engine's own mapping (lib/intents/commands.ts), which decides the answer; the status
-- written here only tells a person reading the table which kind of answer it was (success, missing, refused).
CREATE OR REPLACE FUNCTION "bridge_complete_key"(p_scope text, p_key text, p_body jsonb) RETURNS void
LANGUAGE sql AS $$
  UPDATE "idempotency_records"
  SET "state" = 'completed', "response_body" = p_body,
      "response_status" = CASE p_body->>'outcome' WHEN 'applied' THEN 200 WHEN 'already_applied' THEN 200 WHEN 'not_found' THEN 404 ELSE 409 END
  WHERE "scope" = p_scope AND "key" = p_key AND "state" = 'in_progress';
$$;

-- What a fenced write records in its audit event: the lease resource and token it was accepted with, and how far the
-- lease event log had got at that moment (the last id drawn from its sequence). The write holds its resource's
-- fence row (bridge_fence_accept) when it reads that position, and every grant of the resource draws its event id
-- while holding the same row, so the grants with ids up to the position are exactly those made before the write:
-- the invariant checker (lib/invariants) proves from it, without trusting any clock, that no write was accepted
-- after a higher token had been granted. Null when the write is not fenced.
CREATE OR REPLACE FUNCTION "bridge_fenced_write_record"(p_resource text, p_token bigint) RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF p_resource IS NULL THEN
    RETURN NULL;
  END IF;
  RETURN jsonb_build_object('resource', p_resource, 'token', p_token,
                            'leaseLogPosition', coalesce(pg_sequence_last_value('"lease_events_id_seq"'::regclass), 0));
END $$;
