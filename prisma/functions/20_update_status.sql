-- A status update, in one call whatever the strategy. p_lock says how the row is read:
--   'try'      SELECT … FOR UPDATE when the row is free; SQLSTATE BR001 when another transaction holds it (pessimistic,
--              first call: the console decides whether to wait, docs/LOCKING.md)
--   'wait'     the same, and on a held row a waiter place (BR002 when none is free), then FOR UPDATE under the lock timeout
--   'nowait'   SELECT … FOR UPDATE NOWAIT (fail at once when someone holds the row)
--   'none'     a plain read; the write then only applies at the version read (optimistic); 'raced' when it moved;
--              BR001 when another transaction holds the row at the write
--   'adaptive' 'none', unless the intent was contended recently; on a race it records the contention and takes the
--              row lock at once, inside this call, as 'try'
-- The checks come in one order for every mode: not found → fencing token → already applied → stale expected version
-- → invalid transition → write, each one WHEN of bridge_status_check; a new guard is one more WHEN before the write.
-- The state machine's rule stays in TypeScript: the caller passes the statuses allowed to move to p_to.
-- With an idempotency key the outcome is stored in the key's record by this same call (same transaction).

-- Already at p_to, and (with an expected version) either at it, or one step past it by a status change to p_to:
-- typically an identical request that won the race.
CREATE OR REPLACE FUNCTION "bridge_status_already_applied"(cur "intents", p_to text, p_expected_version integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT cur."status"::text = p_to AND (p_expected_version IS NULL OR p_expected_version = cur."version"
    OR (p_expected_version = cur."version" - 1 AND EXISTS (
          SELECT 1 FROM "audit_events" a
          WHERE a."intent_id" = cur."id" AND a."version_after" = cur."version" AND a."to_status"::text = p_to
            AND a."from_status" IS DISTINCT FROM a."to_status" AND a."action" IN ('status_change', 'bulk_status_change'))));
$$;

-- The checks of a status update, in their one order (NULL: none refuses, write it).
CREATE OR REPLACE FUNCTION "bridge_status_check"(
  cur "intents", p_to text, p_allowed_from text[], p_expected_version integer, p_fence_resource text, p_fence_token bigint
) RETURNS text
LANGUAGE sql VOLATILE AS $$
  SELECT CASE
    WHEN cur."id" IS NULL THEN 'not_found'
    -- A lease-protected write whose token is not its resource's current grant (bridge_fence_accept,
    -- docs/LEASES.md): superseded (its writer's lease passed on) or never granted; nothing is written. Asked before
    -- anything else about the intent: a writer whose lease passed on must learn it, also when the intent already
    -- looks as it asked (an "already applied" would tell a fenced-out writer it still holds the lease).
    WHEN p_fence_resource IS NOT NULL AND NOT "bridge_fence_accept"(p_fence_resource, p_fence_token) THEN 'fencing_token_stale'
    WHEN "bridge_status_already_applied"(cur, p_to, p_expected_version) THEN 'already_applied'
    WHEN p_expected_version IS NOT NULL AND p_expected_version <> cur."version" THEN 'stale'
    WHEN NOT (cur."status"::text = ANY(p_allowed_from)) THEN 'invalid_transition'
  END;
$$;

-- The write: the intent moved to p_to if it is still at the version read, with its audit event. NULL (nothing
-- written) when the version moved since.
-- A fenced write records its token and the lease log's position in its audit event (the invariant checker proves
-- from them that no write came after a higher token was granted).
SELECT "bridge_drop_overloads"('bridge_write_status');
CREATE OR REPLACE FUNCTION "bridge_write_status"(
  cur "intents", p_to text, p_actor text, p_reason text, p_fence_resource text, p_fence_token bigint
) RETURNS "intents"
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  written "intents";
BEGIN
  UPDATE "intents" i SET "status" = p_to::"IntentStatus", "version" = i."version" + 1, "updated_at" = now()
  WHERE i."id" = cur."id" AND i."version" = cur."version"
  RETURNING i.* INTO written;
  IF FOUND THEN
    INSERT INTO "audit_events" ("intent_id", "action", "actor", "from_status", "to_status", "version_before", "version_after", "details")
    VALUES (cur."id", 'status_change', p_actor, cur."status", written."status", cur."version", written."version",
            CASE WHEN p_reason IS NULL AND p_fence_resource IS NULL THEN 'null'::jsonb
                 ELSE jsonb_strip_nulls(jsonb_build_object('reason', p_reason,
                                                           'fencing', "bridge_fenced_write_record"(p_fence_resource, p_fence_token))) END);
  END IF;
  RETURN written;
END $$;

-- A refused status change is on record like an accepted one: its own audit row, written by the call that refused
-- it, saying what was asked (from, to, at which version, the caller's reason) and why it was refused. The statuses
-- are in the details, not in from_status/to_status: those columns mean the intent moved (the outbox sends a
-- status_changed event for such rows, and the invariants read versions from them), and this one did not. p_details
-- adds to the details (a bulk change says how large it was and how many of its intents stopped it).
SELECT "bridge_drop_overloads"('bridge_audit_refused_status');
CREATE OR REPLACE FUNCTION "bridge_audit_refused_status"(cur "intents", p_to text, p_allowed_from text[], p_actor text, p_reason text, p_details jsonb DEFAULT NULL)
RETURNS void
LANGUAGE sql VOLATILE AS $$
  INSERT INTO "audit_events" ("intent_id", "action", "actor", "details")
  VALUES (cur."id", 'status_change_refused', p_actor,
          jsonb_strip_nulls(jsonb_build_object(
            'refused', 'invalid_transition',
            'from', cur."status"::text,
            'to', p_to,
            'version', cur."version",
            'why', CASE WHEN cardinality(p_allowed_from) = 0 THEN format('nothing moves to %s', p_to)
                        ELSE format('%s is reached only from %s; the intent is %s', p_to, array_to_string(p_allowed_from, ', '), cur."status") END,
            'reason', p_reason)) || coalesce(p_details, '{}'::jsonb));
$$;

SELECT "bridge_drop_overloads"('bridge_update_status');
CREATE OR REPLACE FUNCTION "bridge_update_status"(
  p_id uuid, p_to text, p_allowed_from text[], p_expected_version integer,
  p_lock text, p_lock_timeout_ms integer, p_contended_within_ms integer,
  p_actor text, p_reason text, p_idem_scope text, p_idem_key text,
  p_fence_resource text DEFAULT NULL, p_fence_token bigint DEFAULT NULL
) RETURNS TABLE (outcome text, intent "intents", prior_status text, took_lock boolean, lock_wait_ms double precision)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  cur "intents";
  turn record;
  mode text;
  raced boolean := false;
BEGIN
  PERFORM "bridge_label"('update_status', p_id, p_lock_timeout_ms, p_actor);
  mode := "bridge_first_mode"(p_lock, p_id, p_contended_within_ms);
  took_lock := false;
  lock_wait_ms := 0;
  LOOP
    turn := "bridge_command_read"(p_id, mode, raced);
    cur := turn.cur;
    took_lock := took_lock OR mode <> 'none';
    lock_wait_ms := lock_wait_ms + turn.waited_ms;
    -- Recorded before the write it delayed, so the intent's timeline shows the wait first (bridge_write_seq).
    IF turn.waited_ms >= "bridge_lock_wait_floor_ms"() THEN
      PERFORM "bridge_note_lock_wait"('update_status', ARRAY[p_id], turn.waited_ms, p_actor);
    END IF;
    intent := cur;
    prior_status := cur."status"::text;
    outcome := "bridge_status_check"(cur, p_to, p_allowed_from, p_expected_version, p_fence_resource, p_fence_token);
    IF outcome = 'stale' THEN
      PERFORM "bridge_refuse_stale"('update_status', cur, p_expected_version, p_actor, p_lock = 'adaptive');
    ELSIF outcome = 'invalid_transition' THEN
      PERFORM "bridge_audit_refused_status"(cur, p_to, p_allowed_from, p_actor, p_reason);
    ELSIF outcome IS NULL THEN
      IF mode = 'none' THEN PERFORM "bridge_claim_unlocked"(cur."id"); END IF;
      intent := "bridge_write_status"(cur, p_to, p_actor, p_reason, p_fence_resource, p_fence_token);
      outcome := CASE WHEN intent."id" IS NOT NULL THEN 'applied' ELSE 'raced' END;
    END IF;
    EXIT WHEN NOT "bridge_queue_after_race"(outcome, p_lock, mode);
    mode := 'try';
    raced := true;
  END LOOP;

  IF p_idem_key IS NOT NULL AND outcome <> 'raced' THEN
    PERFORM "bridge_complete_key"(p_idem_scope, p_idem_key,
      jsonb_build_object('outcome', outcome, 'intent', CASE WHEN intent."id" IS NOT NULL THEN to_jsonb(intent) END, 'priorStatus', prior_status));
  END IF;
  RETURN NEXT;
END $$;
