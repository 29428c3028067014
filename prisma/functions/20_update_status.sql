-- A status update, in one call whatever the strategy. p_lock says how the row is read:
--   'wait'     SELECT … FOR UPDATE under the lock timeout (pessimistic)
--   'nowait'   SELECT … FOR UPDATE NOWAIT (fail at once when someone holds the row)
--   'none'     a plain read; the write then only applies at the version read (optimistic); 'raced' when it moved
--   'adaptive' 'none', unless the intent was contended recently; on a race it records the contention and queues on
--              the row lock at once, inside this call
-- The checks come in one order for every mode: not found → already applied → stale expected version → invalid
-- transition → write. Each is one branch of one IF; a new guard is one more ELSIF before the write. The state
-- machine's rule stays in TypeScript: the caller passes the statuses allowed to move to p_to.
-- With an idempotency key the outcome is stored in the key's record by this same call (same transaction).
-- Each statement of a volatile function reads a fresh snapshot, so every check after the lock sees what committed
-- while the call waited for it.
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
  cur "intents"%ROWTYPE;
  mode text := p_lock;
  present boolean;
  raced boolean := false;
  started timestamptz;
BEGIN
  PERFORM "bridge_label"('update_status', p_id, p_lock_timeout_ms, p_actor);
  IF mode = 'adaptive' THEN
    mode := CASE WHEN "bridge_recently_contended"(p_id, p_contended_within_ms) THEN 'wait' ELSE 'none' END;
  END IF;
  took_lock := false;
  lock_wait_ms := 0;
  LOOP
    started := clock_timestamp();
    IF mode = 'wait' THEN
      SELECT * INTO cur FROM "intents" i WHERE i."id" = p_id FOR UPDATE;
    ELSIF mode = 'nowait' THEN
      SELECT * INTO cur FROM "intents" i WHERE i."id" = p_id FOR UPDATE NOWAIT;
    ELSE
      SELECT * INTO cur FROM "intents" i WHERE i."id" = p_id;
    END IF;
    present := FOUND;
    IF mode <> 'none' THEN
      took_lock := true;
      lock_wait_ms := lock_wait_ms + extract(epoch FROM clock_timestamp() - started) * 1000;
    END IF;
    IF raced AND present THEN PERFORM "bridge_note_contention"(p_id); END IF;
    intent := cur;
    prior_status := cur."status"::text;

    IF NOT present THEN
      outcome := 'not_found';
    ELSIF cur."status"::text = p_to AND (p_expected_version IS NULL OR p_expected_version = cur."version"
          OR (p_expected_version = cur."version" - 1 AND EXISTS (
                SELECT 1 FROM "audit_events" a
                WHERE a."intent_id" = p_id AND a."version_after" = cur."version" AND a."to_status"::text = p_to
                  AND a."from_status" IS DISTINCT FROM a."to_status" AND a."action" IN ('status_change', 'bulk_status_change')))) THEN
      -- Typically an identical request that won the race.
      outcome := 'already_applied';
    ELSIF p_expected_version IS NOT NULL AND p_expected_version <> cur."version" THEN
      outcome := 'stale';
      INSERT INTO "conflict_events" ("intent_id", "operation", "expected_version", "current_version", "reason", "actor")
      VALUES (p_id, 'update_status', p_expected_version, cur."version",
              format('update_status: expected version %s, intent is at %s (%s)', p_expected_version, cur."version", cur."status"), p_actor);
      IF p_lock = 'adaptive' THEN PERFORM "bridge_note_contention"(p_id); END IF;
    ELSIF NOT (cur."status"::text = ANY(p_allowed_from)) THEN
      outcome := 'invalid_transition';
    ELSIF p_fence_resource IS NOT NULL AND NOT "bridge_fence_accept"(p_fence_resource, p_fence_token) THEN
      -- A lease-protected write whose token is older than one already granted or written for its resource
      -- (migration 20261124110000_leases): its writer's lease ran out; nothing is written.
      outcome := 'fencing_token_stale';
    ELSE
      UPDATE "intents" i SET "status" = p_to::"IntentStatus", "version" = i."version" + 1, "updated_at" = now()
      WHERE i."id" = p_id AND i."version" = cur."version"
      RETURNING i.* INTO intent;
      IF FOUND THEN
        INSERT INTO "audit_events" ("intent_id", "action", "actor", "from_status", "to_status", "version_before", "version_after", "details")
        VALUES (p_id, 'status_change', p_actor, cur."status", intent."status", cur."version", intent."version",
                CASE WHEN p_reason IS NULL THEN 'null'::jsonb ELSE jsonb_build_object('reason', p_reason) END);
        outcome := 'applied';
      ELSIF p_lock = 'adaptive' AND mode = 'none' THEN
        -- Contended: queue on the row now. The conflict is recorded once the row is ours (below), so callers
        -- colliding here do not also queue on the contention record while they wait for the row.
        mode := 'wait';
        raced := true;
        CONTINUE;
      ELSE
        outcome := 'raced';
      END IF;
    END IF;
    EXIT;
  END LOOP;

  IF p_idem_key IS NOT NULL AND outcome <> 'raced' THEN
    PERFORM "bridge_complete_key"(p_idem_scope, p_idem_key,
      jsonb_build_object('outcome', outcome, 'intent', CASE WHEN present THEN to_jsonb(intent) END, 'priorStatus', prior_status));
  END IF;
  RETURN NEXT;
END $$;
