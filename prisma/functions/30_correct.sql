-- A correction, in one call whatever the strategy: deep-merges p_diff into the payload and moves the status as the
-- state machine says (the caller passes its mapping: p_from[i] becomes p_to[i]; any other status refuses). p_lock
-- as for bridge_update_status ('wait', 'none', 'adaptive'; corrections have no NOWAIT). The checks, in this order
-- for every mode: not found → already applied (this correction id exists) → stale expected version → refused
-- status → write; a new guard is one more ELSIF before the write. With an idempotency key the outcome is stored by
-- this same call.
SELECT "bridge_drop_overloads"('bridge_correct');
CREATE OR REPLACE FUNCTION "bridge_correct"(
  p_id uuid, p_correction_id text, p_diff jsonb, p_source text, p_reason text, p_metadata jsonb, p_actor text,
  p_expected_version integer, p_from text[], p_to text[],
  p_lock text, p_lock_timeout_ms integer, p_contended_within_ms integer,
  p_idem_scope text, p_idem_key text, p_attempt integer,
  p_fence_resource text DEFAULT NULL, p_fence_token bigint DEFAULT NULL
) RETURNS TABLE (outcome text, intent "intents", prior_status text, correction_count bigint, took_lock boolean, lock_wait_ms double precision)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  cur "intents"%ROWTYPE;
  mode text := p_lock;
  present boolean;
  raced boolean := false;
  started timestamptz;
  step integer;
BEGIN
  PERFORM "bridge_label"('reevaluate', p_id, p_lock_timeout_ms, p_actor);
  IF mode = 'adaptive' THEN
    mode := CASE WHEN "bridge_recently_contended"(p_id, p_contended_within_ms) THEN 'wait' ELSE 'none' END;
  END IF;
  took_lock := false;
  lock_wait_ms := 0;
  LOOP
    started := clock_timestamp();
    IF mode = 'wait' THEN
      SELECT * INTO cur FROM "intents" i WHERE i."id" = p_id FOR UPDATE;
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
    step := array_position(p_from, cur."status"::text);

    IF NOT present THEN
      outcome := 'not_found';
    ELSIF EXISTS (SELECT 1 FROM "corrections" c WHERE c."intent_id" = p_id AND c."correction_id" = p_correction_id) THEN
      outcome := 'already_applied';
      -- Unlocked, the row read above may predate the commit that applied this correction: show the intent with it.
      IF mode = 'none' THEN SELECT * INTO intent FROM "intents" i WHERE i."id" = p_id; END IF;
    ELSIF p_expected_version IS NOT NULL AND p_expected_version <> cur."version" THEN
      -- Told even when the intent moved on to COMPLETED or FAILED: the reviewer needs to see what changed.
      outcome := 'stale';
      INSERT INTO "conflict_events" ("intent_id", "operation", "expected_version", "current_version", "reason", "actor")
      VALUES (p_id, 'reevaluate', p_expected_version, cur."version",
              format('reevaluate: expected version %s, intent is at %s (%s)', p_expected_version, cur."version", cur."status"), p_actor);
      IF p_lock = 'adaptive' THEN PERFORM "bridge_note_contention"(p_id); END IF;
    ELSIF step IS NULL THEN
      outcome := 'refused';
    ELSIF p_fence_resource IS NOT NULL AND NOT "bridge_fence_accept"(p_fence_resource, p_fence_token) THEN
      -- A lease-protected write whose token is older than one already granted or written for its resource
      -- (migration 20261124110000_leases): its writer's lease ran out; nothing is written.
      outcome := 'fencing_token_stale';
    ELSE
      UPDATE "intents" i
      SET "payload" = "bridge_jsonb_deep_merge"(i."payload", p_diff), "status" = p_to[step]::"IntentStatus",
          "version" = i."version" + 1, "updated_at" = now()
      WHERE i."id" = p_id AND i."version" = cur."version"
      RETURNING i.* INTO intent;
      IF FOUND THEN
        INSERT INTO "corrections" ("intent_id", "correction_id", "diff", "source", "reason", "metadata", "actor",
                                   "version_before", "version_after", "status_before", "status_after")
        VALUES (p_id, p_correction_id, p_diff, p_source, p_reason, p_metadata, p_actor,
                cur."version", intent."version", cur."status", intent."status");
        INSERT INTO "audit_events" ("intent_id", "action", "actor", "from_status", "to_status", "version_before", "version_after", "details")
        VALUES (p_id, 'correction', p_actor, cur."status", intent."status", cur."version", intent."version",
                jsonb_build_object('correctionId', p_correction_id, 'reason', p_reason, 'source', p_source));
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

  correction_count := CASE WHEN present THEN (SELECT count(*) FROM "corrections" c WHERE c."intent_id" = p_id) ELSE 0 END;
  IF p_idem_key IS NOT NULL AND outcome <> 'raced' THEN
    PERFORM "bridge_complete_key"(p_idem_scope, p_idem_key,
      jsonb_build_object('outcome', outcome, 'intent', CASE WHEN present THEN to_jsonb(intent) END, 'priorStatus', prior_status,
                         'correctionCount', correction_count, 'retries', p_attempt - 1));
  END IF;
  RETURN NEXT;
END $$;
