-- A bulk status update, all or nothing, in one call: every row locked in id order (so two bulk updates over
-- overlapping sets queue behind each other instead of deadlocking), then either one row per missing id
-- ('not_found'), or one per intent that cannot move ('invalid_transition'), and no intent changed: each of those is
-- audited as a refused status change, as a single one is (bridge_audit_refused_status), with the batch's size — or
-- every intent not yet at p_to moved, with its audit event ('applied'), the others 'already_applied'. p_details adds
-- to each audit event's details (a console bulk batch passes its batch id).
-- p_lock as for the other commands' row locks (bridge_read_intent): 'try' takes the rows only when none is held
-- (BR001 otherwise, nothing written); 'wait' takes a waiter place for each held row (BR002 when one has none free)
-- and then queues on the rows in id order.
SELECT "bridge_drop_overloads"('bridge_bulk_update_status');
CREATE OR REPLACE FUNCTION "bridge_bulk_update_status"(
  p_ids uuid[], p_to text, p_allowed_from text[], p_lock_timeout_ms integer, p_actor text, p_reason text,
  p_details jsonb DEFAULT NULL, p_lock text DEFAULT 'wait'
) RETURNS TABLE (outcome text, intent_id uuid, intent "intents", prior_status text, lock_wait_ms double precision)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  started timestamptz;
  waited double precision;
  free uuid[];
  held uuid;
  refused "intents"[];
BEGIN
  PERFORM "bridge_label"('bulk_update_status', p_ids[1], p_lock_timeout_ms, p_actor);
  started := clock_timestamp();
  IF p_lock = 'try' THEN
    IF (SELECT count(*) FROM (SELECT 1 FROM "intents" i WHERE i."id" = ANY(p_ids) ORDER BY i."id" FOR UPDATE SKIP LOCKED) s)
       < (SELECT count(*) FROM "intents" i WHERE i."id" = ANY(p_ids)) THEN
      PERFORM "bridge_row_busy"(p_ids[1]);
    END IF;
  ELSE
    -- Which rows are held, seen by taking the free ones in a subtransaction that is then undone: keeping them while
    -- queueing for a lower id would break the one global order that keeps bulk updates from deadlocking.
    BEGIN
      SELECT array_agg(s."id") INTO free FROM (SELECT i."id" FROM "intents" i WHERE i."id" = ANY(p_ids) ORDER BY i."id" FOR UPDATE SKIP LOCKED) s;
      RAISE EXCEPTION USING ERRCODE = 'BR000';
    EXCEPTION WHEN SQLSTATE 'BR000' THEN NULL;
    END;
    FOR held IN SELECT i."id" FROM "intents" i WHERE i."id" = ANY(p_ids) AND NOT (i."id" = ANY(coalesce(free, '{}'))) ORDER BY i."id" LOOP
      PERFORM "bridge_take_waiter_place"(held);
    END LOOP;
    PERFORM 1 FROM "intents" i WHERE i."id" = ANY(p_ids) ORDER BY i."id" FOR UPDATE;
  END IF;
  waited := extract(epoch FROM clock_timestamp() - started) * 1000;
  IF waited >= "bridge_lock_wait_floor_ms"() THEN
    -- Each intent of the batch is told the batch's wait (its rows are locked in one statement).
    PERFORM "bridge_note_lock_wait"('bulk_update_status', ARRAY(SELECT i."id" FROM "intents" i WHERE i."id" = ANY(p_ids)), waited, p_actor);
  END IF;

  RETURN QUERY SELECT 'not_found'::text, x, NULL::"intents", NULL::text, waited
    FROM unnest(p_ids) x WHERE NOT EXISTS (SELECT 1 FROM "intents" i WHERE i."id" = x) ORDER BY x;
  IF FOUND THEN RETURN; END IF;

  SELECT array_agg(i ORDER BY i."id") INTO refused
    FROM "intents" i WHERE i."id" = ANY(p_ids) AND i."status"::text <> p_to AND NOT (i."status"::text = ANY(p_allowed_from));
  IF refused IS NOT NULL THEN
    PERFORM "bridge_audit_refused_status"(r, p_to, p_allowed_from, p_actor, p_reason,
              coalesce(p_details, '{}'::jsonb) || jsonb_build_object('batchSize', cardinality(p_ids), 'refusedInBatch', cardinality(refused)))
      FROM unnest(refused) r;
    RETURN QUERY SELECT 'invalid_transition'::text, r."id", r, r."status"::text, waited FROM unnest(refused) r;
    RETURN;
  END IF;

  RETURN QUERY
  WITH prior AS (
    SELECT i."id", i."status" FROM "intents" i WHERE i."id" = ANY(p_ids)
  ), updated AS (
    UPDATE "intents" i SET "status" = p_to::"IntentStatus", "version" = i."version" + 1, "updated_at" = now()
    FROM prior p WHERE i."id" = p."id" AND p."status"::text <> p_to
    RETURNING i AS row, p."status" AS prior
  ), audit AS (
    INSERT INTO "audit_events" ("intent_id", "action", "actor", "from_status", "to_status", "version_before", "version_after", "details")
    SELECT (u.row)."id", 'bulk_status_change', p_actor, u.prior, (u.row)."status", (u.row)."version" - 1, (u.row)."version",
           coalesce(p_details, '{}'::jsonb) || jsonb_build_object('batchSize', cardinality(p_ids))
             || CASE WHEN p_reason IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('reason', p_reason) END
    FROM updated u
  )
  SELECT 'applied'::text, (u.row)."id", u.row, u.prior::text, waited FROM updated u
  UNION ALL
  SELECT 'already_applied'::text, i."id", i, i."status"::text, waited
  FROM "intents" i JOIN prior p ON p."id" = i."id" WHERE p."status"::text = p_to
  ORDER BY 2;
END $$;
