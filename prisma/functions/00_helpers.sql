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

-- The namespace (the first key of a two-key advisory lock) of the locks that name a backend's acting user.
CREATE OR REPLACE FUNCTION "bridge_actor_space"() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT 1094931538 $$;  -- "ACTR"

-- Labels the backend for the Locks page (bridge:<operation>:<intent id>) and sets this transaction's lock timeout.
-- The acting user (the console user or API token owner) does not fit in application_name beside the operation and
-- the intent (63 bytes), and no other session can read this one's settings, so it is named by a shared advisory
-- lock (bridge_actor_space(), hashtext(actor)) held to the end of the transaction: shared locks never conflict with
-- each other, nothing takes them exclusively, and pg_locks shows them to the Locks page, which maps the key back
-- to the name through backend_actors (written by the console before it first acts for that name).
CREATE OR REPLACE FUNCTION "bridge_label"(p_operation text, p_intent uuid, p_lock_timeout_ms integer, p_actor text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('application_name', left('bridge:' || p_operation || ':' || p_intent::text, 63), true),
          set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
  IF p_actor IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock_shared("bridge_actor_space"(), hashtext(p_actor));
  END IF;
END $$;

-- Without the acting user: what functions from before it existed call while an upgrade replaces them.
CREATE OR REPLACE FUNCTION "bridge_label"(p_operation text, p_intent uuid, p_lock_timeout_ms integer) RETURNS void
LANGUAGE sql AS $$ SELECT "bridge_label"(p_operation, p_intent, p_lock_timeout_ms, NULL) $$;

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
