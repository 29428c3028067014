-- A correction, in one call whatever the strategy: deep-merges p_diff into the payload and moves the status as the
-- state machine says (the caller passes its mapping: p_from[i] becomes p_to[i]; any other status refuses). p_lock
-- as for bridge_update_status ('try', 'wait', 'none', 'adaptive'; corrections have no NOWAIT). The checks, in this order
-- for every mode: not found → fencing token → already applied (bridge_correction_repeats) → stale expected version
-- → refused status → write, each one WHEN of bridge_correction_check; a new guard is one more WHEN before the write. With an
-- idempotency key the outcome is stored by this same call.

-- The write: the diff deep-merged into the payload and the status moved to p_to_status, if the intent is still at
-- the version read, with its correction row and audit event. NULL (nothing written) when the version moved since.
SELECT "bridge_drop_overloads"('bridge_write_correction');
CREATE OR REPLACE FUNCTION "bridge_write_correction"(
  cur "intents", p_correction_id text, p_diff jsonb, p_source text, p_reason text, p_metadata jsonb, p_actor text, p_to_status text,
  p_fence_resource text, p_fence_token bigint
) RETURNS "intents"
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  written "intents";
BEGIN
  UPDATE "intents" i
  SET "payload" = "bridge_jsonb_deep_merge"(i."payload", p_diff), "status" = p_to_status::"IntentStatus",
      "version" = i."version" + 1, "updated_at" = now()
  WHERE i."id" = cur."id" AND i."version" = cur."version"
  RETURNING i.* INTO written;
  IF FOUND THEN
    INSERT INTO "corrections" ("intent_id", "correction_id", "diff", "source", "reason", "metadata", "actor",
                               "version_before", "version_after", "status_before", "status_after")
    VALUES (cur."id", p_correction_id, p_diff, p_source, p_reason, p_metadata, p_actor,
            cur."version", written."version", cur."status", written."status");
    INSERT INTO "audit_events" ("intent_id", "action", "actor", "from_status", "to_status", "version_before", "version_after", "details")
    VALUES (cur."id", 'correction', p_actor, cur."status", written."status", cur."version", written."version",
            jsonb_strip_nulls(jsonb_build_object('correctionId', p_correction_id, 'reason', p_reason, 'source', p_source,
                                                 'fencing', "bridge_fenced_write_record"(p_fence_resource, p_fence_token))));
  END IF;
  RETURN written;
END $$;

-- The intent's latest correction identical to this one: the same diff, so the same correction id, or that id with
-- "@<version>" when it was applied again (below). Its id and the version it was applied to; NULLs when there is none.
-- (Scalars, not a "corrections" row: a variable of a table's row type makes the caller lock the table on its first
-- call in a session, before anything else it does.)
SELECT "bridge_drop_overloads"('bridge_identical_correction');
CREATE OR REPLACE FUNCTION "bridge_identical_correction"(p_intent uuid, p_correction_id text, OUT correction_id text, OUT version_before integer)
LANGUAGE sql STABLE AS $$
  SELECT c."correction_id", c."version_before" FROM "corrections" c
  WHERE c."intent_id" = p_intent AND (c."correction_id" = p_correction_id OR starts_with(c."correction_id", p_correction_id || '@'))
  ORDER BY c."version_after" DESC
  LIMIT 1;
$$;

-- Whether a correction identical to an earlier one (the latest such, applied from `prior_version_before`:
-- bridge_identical_correction) is a repeat of it, to be
-- answered "already applied" with nothing written. It is, when the caller names no version: a retry cannot be told
-- apart from a correction sent again on purpose, and a retry must not be applied twice. With an expected version it
-- is a repeat when the earlier one was applied from that version or later (the caller had not seen it: its own retry, or the
-- same correction sent by two people at once), or when the payload still shows the diff (writing it would change
-- nothing but the version). Otherwise the caller saw the earlier one applied and a later change undo it, and asks for it
-- again: setting a field back to an earlier value. That is a new correction, written with the id
-- "<correction id>@<version it is applied to>", deterministic for the caller's view, so its own retry is a repeat.
SELECT "bridge_drop_overloads"('bridge_correction_repeats');
CREATE OR REPLACE FUNCTION "bridge_correction_repeats"(cur "intents", prior_version_before integer, p_diff jsonb, p_expected_version integer)
RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT prior_version_before IS NOT NULL AND (
    p_expected_version IS NULL
    OR prior_version_before >= p_expected_version
    OR "bridge_jsonb_deep_merge"(cur."payload", p_diff) = cur."payload");
$$;

-- The checks of a correction, in their one order (NULL: none refuses, write it).
SELECT "bridge_drop_overloads"('bridge_correction_check');
CREATE OR REPLACE FUNCTION "bridge_correction_check"(
  cur "intents", prior_version_before integer, p_diff jsonb, p_expected_version integer, p_from text[], p_fence_resource text, p_fence_token bigint
) RETURNS text
LANGUAGE sql VOLATILE AS $$
  SELECT CASE
    WHEN cur."id" IS NULL THEN 'not_found'
    -- A lease-protected write whose token is not its resource's current grant (bridge_fence_accept,
    -- docs/LEASES.md): superseded (its writer's lease passed on) or never granted; nothing is written. Asked first,
    -- as for a status change: a fenced-out writer is told so, never that its correction is already applied.
    WHEN p_fence_resource IS NOT NULL AND NOT "bridge_fence_accept"(p_fence_resource, p_fence_token) THEN 'fencing_token_stale'
    WHEN "bridge_correction_repeats"(cur, prior_version_before, p_diff, p_expected_version) THEN 'already_applied'
    -- Told even when the intent moved on to COMPLETED or FAILED: the reviewer needs to see what changed.
    WHEN p_expected_version IS NOT NULL AND p_expected_version <> cur."version" THEN 'stale'
    WHEN array_position(p_from, cur."status"::text) IS NULL THEN 'refused'
  END;
$$;

SELECT "bridge_drop_overloads"('bridge_correct');
CREATE OR REPLACE FUNCTION "bridge_correct"(
  p_id uuid, p_correction_id text, p_diff jsonb, p_source text, p_reason text, p_metadata jsonb, p_actor text,
  p_expected_version integer, p_from text[], p_to text[],
  p_lock text, p_lock_timeout_ms integer, p_contended_within_ms integer,
  p_idem_scope text, p_idem_key text, p_attempt integer,
  p_fence_resource text DEFAULT NULL, p_fence_token bigint DEFAULT NULL
) RETURNS TABLE (outcome text, intent "intents", prior_status text, correction_count bigint, took_lock boolean, lock_wait_ms double precision,
                correction_id text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  cur "intents";
  prior_id text;
  prior_version_before integer;
  turn record;
  mode text;
  raced boolean := false;
BEGIN
  PERFORM "bridge_label"('reevaluate', p_id, p_lock_timeout_ms, p_actor);
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
      PERFORM "bridge_note_lock_wait"('reevaluate', ARRAY[p_id], turn.waited_ms, p_actor);
    END IF;
    intent := cur;
    prior_status := cur."status"::text;
    SELECT p.correction_id, p.version_before INTO prior_id, prior_version_before FROM "bridge_identical_correction"(p_id, p_correction_id) p;
    outcome := "bridge_correction_check"(cur, prior_version_before, p_diff, p_expected_version, p_from, p_fence_resource, p_fence_token);
    -- The id the caller is answered with: the correction it repeats, or the one written.
    correction_id := CASE WHEN outcome = 'already_applied' THEN prior_id
                          WHEN prior_id IS NULL THEN p_correction_id
                          ELSE p_correction_id || '@' || cur."version" END;
    IF outcome = 'already_applied' AND mode = 'none' THEN
      -- Unlocked, the row read above may predate the commit that applied this correction: show the intent with it.
      intent := "bridge_read_intent"(p_id, 'none');
    ELSIF outcome = 'stale' THEN
      PERFORM "bridge_refuse_stale"('reevaluate', cur, p_expected_version, p_actor, p_lock = 'adaptive');
    ELSIF outcome IS NULL THEN
      IF mode = 'none' THEN PERFORM "bridge_claim_unlocked"(cur."id"); END IF;
      intent := "bridge_write_correction"(cur, correction_id, p_diff, p_source, p_reason, p_metadata, p_actor,
                                          p_to[array_position(p_from, cur."status"::text)], p_fence_resource, p_fence_token);
      outcome := CASE WHEN intent."id" IS NOT NULL THEN 'applied' ELSE 'raced' END;
    END IF;
    EXIT WHEN NOT "bridge_queue_after_race"(outcome, p_lock, mode);
    mode := 'try';
    raced := true;
  END LOOP;

  correction_count := CASE WHEN intent."id" IS NOT NULL THEN (SELECT count(*) FROM "corrections" c WHERE c."intent_id" = p_id) ELSE 0 END;
  IF p_idem_key IS NOT NULL AND outcome <> 'raced' THEN
    PERFORM "bridge_complete_key"(p_idem_scope, p_idem_key,
      jsonb_build_object('outcome', outcome, 'intent', CASE WHEN intent."id" IS NOT NULL THEN to_jsonb(intent) END, 'priorStatus', prior_status,
                         'correctionCount', correction_count, 'retries', p_attempt - 1, 'correctionId', correction_id));
  END IF;
  RETURN NEXT;
END $$;

-- Corrections of one intent that met in one process, in one call (lib/intents/together.ts): one transaction, one
-- row lock, one commit for all of them. Each item is bridge_correct itself, in the order given, so each correction
-- is checked and written exactly as it would be on its own (its own version, correction row, audit event, conflict
-- event and idempotency record) and answers its own outcome; `item` numbers the answers from 1 in that order.
-- An item: { id, correctionId, diff, source, reason, metadata, actor, expectedVersion, lock, lockTimeoutMs,
-- contendedWithinMs, idemScope, idemKey, attempt, fenceResource, fenceToken } (absent or JSON null = SQL NULL).
SELECT "bridge_drop_overloads"('bridge_correct_together');
CREATE OR REPLACE FUNCTION "bridge_correct_together"(p_items jsonb, p_from text[], p_to text[])
RETURNS TABLE (item integer, outcome text, intent "intents", prior_status text, correction_count bigint, took_lock boolean, lock_wait_ms double precision,
                correction_id text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  e jsonb;
  n integer := 0;
BEGIN
  FOR e IN SELECT x.value FROM jsonb_array_elements(p_items) x LOOP
    n := n + 1;
    RETURN QUERY
      SELECT n, r.outcome, r.intent, r.prior_status, r.correction_count, r.took_lock, r.lock_wait_ms, r.correction_id
      FROM "bridge_correct"((e->>'id')::uuid, e->>'correctionId', e->'diff', e->>'source', e->>'reason',
        NULLIF(e->'metadata', 'null'::jsonb), e->>'actor', (e->>'expectedVersion')::integer, p_from, p_to,
        e->>'lock', (e->>'lockTimeoutMs')::integer, (e->>'contendedWithinMs')::integer,
        e->>'idemScope', e->>'idemKey', (e->>'attempt')::integer, e->>'fenceResource', (e->>'fenceToken')::bigint) r;
  END LOOP;
END $$;
