-- Hand-written: functions for corrections (lib/intents/repository.ts).

-- The deep merge of a correction, done where the payload lives: objects merge key by key, anything else (arrays,
-- scalars, null) replaces; a null sets the key to null, it does not delete it. lib/intents/json.ts deepMerge is the
-- same rule for the console's previews; test/engine/merge.test.ts checks the two agree.
CREATE FUNCTION "bridge_jsonb_deep_merge"(target jsonb, diff jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  merged jsonb := target;
  k text;
  v jsonb;
BEGIN
  FOR k, v IN SELECT e.key, e.value FROM jsonb_each(diff) e LOOP
    IF jsonb_typeof(v) = 'object' AND jsonb_typeof(merged -> k) = 'object' THEN
      merged := merged || jsonb_build_object(k, "bridge_jsonb_deep_merge"(merged -> k, v));
    ELSE
      merged := merged || jsonb_build_object(k, v);
    END IF;
  END LOOP;
  RETURN merged;
END $$;

-- A locked correction in one call, so the row lock is held only inside Postgres (from the lock to the commit of
-- the caller's one-statement transaction) instead of across the client round trips of an interactive transaction.
-- The same steps, in the same order, as the step-by-step transaction in lib/intents/commands.ts: label the backend
-- and set the lock timeout, SELECT … FOR UPDATE, the correction already applied?, the expected version, the status
-- (the state machine's mapping comes from the caller: p_from[i] becomes p_to[i], any other status refuses), then
-- update, correction row and audit event. Each statement of a volatile function reads a fresh snapshot, so every
-- check after the lock sees what committed while this call waited for it.
CREATE FUNCTION "bridge_correct_locked"(
  p_id uuid, p_label text, p_lock_timeout text,
  p_correction_id text, p_diff jsonb, p_source text, p_reason text, p_metadata jsonb, p_actor text,
  p_expected_version integer, p_from text[], p_to text[]
) RETURNS TABLE (
  outcome text, r_id uuid, r_status text, r_payload jsonb, r_source text, r_version integer, r_is_replay boolean,
  r_created_at timestamptz, r_updated_at timestamptz, r_correction_count bigint, r_lock_wait_ms double precision
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  started timestamptz;
  row_now "intents"%ROWTYPE;
  step integer;
BEGIN
  PERFORM set_config('application_name', left(p_label, 63), true), set_config('lock_timeout', p_lock_timeout, true);
  started := clock_timestamp();
  SELECT * INTO row_now FROM "intents" WHERE "id" = p_id FOR UPDATE;
  r_lock_wait_ms := extract(epoch FROM clock_timestamp() - started) * 1000;
  IF NOT FOUND THEN
    outcome := 'not_found';
    RETURN NEXT;
    RETURN;
  END IF;

  IF EXISTS (SELECT 1 FROM "corrections" c WHERE c."intent_id" = p_id AND c."correction_id" = p_correction_id) THEN
    outcome := 'already_applied';
  ELSIF p_expected_version IS NOT NULL AND p_expected_version <> row_now."version" THEN
    outcome := 'stale';
  ELSE
    step := array_position(p_from, row_now."status"::text);
    IF step IS NULL THEN
      outcome := 'refused';
    ELSE
      UPDATE "intents" i
      SET "payload" = "bridge_jsonb_deep_merge"(i."payload", p_diff), "status" = p_to[step]::"IntentStatus",
          "version" = i."version" + 1, "updated_at" = now()
      WHERE i."id" = p_id
      RETURNING i.* INTO row_now;
      INSERT INTO "corrections" ("intent_id", "correction_id", "diff", "source", "reason", "metadata", "actor",
                                 "version_before", "version_after", "status_before", "status_after")
      VALUES (p_id, p_correction_id, p_diff, p_source, p_reason, p_metadata, p_actor,
              row_now."version" - 1, row_now."version", p_from[step]::"IntentStatus", row_now."status");
      INSERT INTO "audit_events" ("intent_id", "action", "actor", "from_status", "to_status", "version_before", "version_after", "details")
      VALUES (p_id, 'correction', p_actor, p_from[step]::"IntentStatus", row_now."status", row_now."version" - 1, row_now."version",
              jsonb_build_object('correctionId', p_correction_id, 'reason', p_reason, 'source', p_source));
      outcome := 'applied';
    END IF;
  END IF;

  r_id := row_now."id";
  r_status := row_now."status"::text;
  r_payload := row_now."payload";
  r_source := row_now."source";
  r_version := row_now."version";
  r_is_replay := row_now."is_replay";
  r_created_at := row_now."created_at";
  r_updated_at := row_now."updated_at";
  SELECT count(*) INTO r_correction_count FROM "corrections" c WHERE c."intent_id" = p_id;
  RETURN NEXT;
END $$;
