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

-- The lock mode a command's first read takes: as asked, except 'adaptive', which is 'try' (the row lock if it is
-- free) when the intent was contended recently and 'none' (no row lock) otherwise.
CREATE OR REPLACE FUNCTION "bridge_first_mode"(p_lock text, p_intent uuid, p_within_ms integer) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_lock <> 'adaptive' THEN p_lock
              WHEN "bridge_recently_contended"(p_intent, p_within_ms) THEN 'try'
              ELSE 'none' END;
$$;

-- Bounded waiting on a row lock (docs/LOCKING.md, "Waiting on a held row"). The database only ever queues a
-- command on a row lock in mode 'wait', which the console sends after a 'try' found the row held and only while
-- its pool has room for another waiter; and a 'wait' first takes one of a few waiter places of the intent, shared
-- by every console instance on this database. A held row that finds no place free is refused at once (SQLSTATE
-- BR002) instead of adding a connection to the queue; a 'try' that finds the row held answers BR001 (nothing was
-- waited for, nothing written) so the console can decide.

-- How many backends may wait on one intent's row lock at once, over every instance: the database setting
-- bridge.row_waiters (ALTER DATABASE … SET bridge.row_waiters = 4), 4 when unset.
CREATE OR REPLACE FUNCTION "bridge_row_waiters"() RETURNS integer
LANGUAGE sql STABLE AS $$
  SELECT greatest(1, coalesce(nullif(current_setting('bridge.row_waiters', true), '')::integer, 4));
$$;

-- The namespace (the first key of a two-key advisory lock) of the waiter places.
CREATE OR REPLACE FUNCTION "bridge_waiter_space"() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT 1463896404 $$;  -- "WAIT"

-- Takes a free waiter place of the intent (a transaction-scoped advisory lock, tried, never waited for: gone at the
-- end of the transaction, or with the backend) or refuses the command with BR002, naming how many wait already.
CREATE OR REPLACE FUNCTION "bridge_take_waiter_place"(p_id uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  places integer := "bridge_row_waiters"();
BEGIN
  FOR slot IN 1..places LOOP
    IF pg_try_advisory_xact_lock("bridge_waiter_space"(), hashtext(p_id::text || '#' || slot)) THEN
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'intent % is locked and % backends already wait for it', p_id, places
    USING ERRCODE = 'BR002', DETAIL = format('row_waiters=%s', places);
END $$;

-- The row is held by another transaction: BR001, for the console to decide whether to wait (nothing written yet).
CREATE OR REPLACE FUNCTION "bridge_row_busy"(p_id uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'intent % is locked by another transaction', p_id USING ERRCODE = 'BR001';
END $$;

-- Before an unlocked ('none') command writes: its UPDATE would queue on a held row like a 'wait' without a place, so
-- it takes the row lock only if it is free (the lock the UPDATE takes anyway) and answers BR001 otherwise.
CREATE OR REPLACE FUNCTION "bridge_claim_unlocked"(p_id uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM 1 FROM "intents" i WHERE i."id" = p_id FOR UPDATE SKIP LOCKED;
  IF NOT FOUND AND EXISTS (SELECT 1 FROM "intents" i WHERE i."id" = p_id) THEN
    PERFORM "bridge_row_busy"(p_id);
  END IF;
END $$;

-- Reads an intent the way a command's mode says: 'try' SELECT … FOR UPDATE if the row is free (BR001 when it is
-- held), 'wait' the same, and when it is held a waiter place and then FOR UPDATE (under the lock timeout), 'nowait'
-- FOR UPDATE NOWAIT, anything else a plain read. An intent that does not exist comes back as a row of NULLs.
-- Volatile, so each call reads a fresh snapshot: a row read after waiting for its lock is the row as committed.
CREATE OR REPLACE FUNCTION "bridge_read_intent"(p_id uuid, p_mode text) RETURNS "intents"
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  cur "intents";
BEGIN
  IF p_mode = 'try' OR p_mode = 'wait' THEN
    SELECT * INTO cur FROM "intents" i WHERE i."id" = p_id FOR UPDATE SKIP LOCKED;
    IF NOT FOUND AND EXISTS (SELECT 1 FROM "intents" i WHERE i."id" = p_id) THEN
      IF p_mode = 'try' THEN
        PERFORM "bridge_row_busy"(p_id);
      END IF;
      PERFORM "bridge_take_waiter_place"(p_id);
      SELECT * INTO cur FROM "intents" i WHERE i."id" = p_id FOR UPDATE;
    END IF;
  ELSIF p_mode = 'nowait' THEN
    SELECT * INTO cur FROM "intents" i WHERE i."id" = p_id FOR UPDATE NOWAIT;
  ELSE
    SELECT * INTO cur FROM "intents" i WHERE i."id" = p_id;
  END IF;
  RETURN cur;
END $$;

-- One turn of a command's attempt loop reads its intent here: the row as p_mode says (bridge_read_intent), how long
-- the turn waited for the row lock (0 when it took none), and, on the turn after a lost race (p_raced), the
-- contention recorded once the row is ours, so callers colliding on a race do not also queue on the contention
-- record. Assign it to a record: PL/pgSQL cannot take a row and a scalar in one INTO list.
CREATE OR REPLACE FUNCTION "bridge_command_read"(p_id uuid, p_mode text, p_raced boolean, OUT cur "intents", OUT waited_ms double precision)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  started timestamptz := clock_timestamp();
BEGIN
  cur := "bridge_read_intent"(p_id, p_mode);
  waited_ms := CASE WHEN p_mode = 'none' THEN 0 ELSE extract(epoch FROM clock_timestamp() - started) * 1000 END;
  IF p_raced AND cur."id" IS NOT NULL THEN PERFORM "bridge_note_contention"(p_id); END IF;
END $$;

-- Lock waits at least this long (ms) are kept one by one for the intent's timeline (intent_engine_events), written
-- by the command that waited, in its own transaction. An uncontended row lock is taken in well under a millisecond,
-- so a wait this long means somebody held the row; the bound keeps the hot path free of writes while nobody waits.
CREATE OR REPLACE FUNCTION "bridge_lock_wait_floor_ms"() RETURNS double precision
LANGUAGE sql IMMUTABLE AS $$ SELECT 10::double precision $$;

-- Records a lock wait of p_ids that was worth recording (callers check bridge_lock_wait_floor_ms() first, so a
-- command that did not wait runs no INSERT at all).
CREATE OR REPLACE FUNCTION "bridge_note_lock_wait"(p_operation text, p_ids uuid[], p_waited_ms double precision, p_actor text) RETURNS void
LANGUAGE sql VOLATILE AS $$
  INSERT INTO "intent_engine_events" ("intent_id", "kind", "operation", "actor", "waited_ms", "outcome")
  SELECT x, 'lock_wait', p_operation, p_actor, p_waited_ms, 'acquired' FROM unnest(p_ids) x;
$$;

-- Whether a command's turn is followed by a locked one: an adaptive call that read without the lock and then lost
-- the race to write queues on the row lock at once, in the same call, instead of going back to its caller to sleep
-- through a backoff (docs/LOCKING.md). Every other outcome is the call's answer.
CREATE OR REPLACE FUNCTION "bridge_queue_after_race"(p_outcome text, p_lock text, p_mode text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT p_outcome IS NOT DISTINCT FROM 'raced' AND p_lock = 'adaptive' AND p_mode = 'none';
$$;

-- A command refused for a stale expected version: its conflict event, and for an adaptive command the contention
-- it shows (the intent moved on under a caller), so the next commands of every instance queue on the row at once.
CREATE OR REPLACE FUNCTION "bridge_refuse_stale"(p_operation text, cur "intents", p_expected_version integer, p_actor text, p_adaptive boolean) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO "conflict_events" ("intent_id", "operation", "expected_version", "current_version", "reason", "actor")
  VALUES (cur."id", p_operation, p_expected_version, cur."version",
          format('%s: expected version %s, intent is at %s (%s)', p_operation, p_expected_version, cur."version", cur."status"), p_actor);
  IF p_adaptive THEN PERFORM "bridge_note_contention"(cur."id"); END IF;
END $$;

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
