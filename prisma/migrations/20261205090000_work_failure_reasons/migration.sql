-- An intent moved on from RECEIVED outside the pipeline has its waiting work row cancelled: the intent is someone
-- else's now. When that intent later reached COMPLETED or FAILED (an operator failing it, say), the cancelled row
-- was settled again as 'completed' or 'failed', still carrying the cancellation note. The Workers page then counted
-- it among the pipeline's failures and listed it under "Recent failures" with "moved on from RECEIVED outside the
-- pipeline…" as the reason. The pipeline never ran it, so a cancelled row now stays cancelled; only a row still
-- waiting (available or retryable) is settled by its intent reaching the end.
CREATE OR REPLACE FUNCTION "intent_work_follow_status"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 'RECEIVED' THEN
    INSERT INTO intent_work (intent_id) VALUES (NEW.id)
    ON CONFLICT (intent_id) DO UPDATE
      SET state = 'available', round = intent_work.round + 1, attempt = 0, run_after = now(), claimed_by = NULL,
          claimed_at = NULL, heartbeat_at = NULL, lease_until = NULL, last_error = NULL, finished_at = NULL;
  ELSIF NEW.status IN ('COMPLETED', 'FAILED') THEN
    UPDATE intent_work SET state = CASE WHEN NEW.status = 'COMPLETED' THEN 'completed' ELSE 'failed' END, finished_at = now()
    WHERE intent_id = NEW.id AND state IN ('available', 'retryable');
  ELSE
    UPDATE intent_work SET state = 'cancelled', finished_at = now(), last_error = 'moved on from RECEIVED outside the pipeline before a worker took it'
    WHERE intent_id = NEW.id AND state = 'available';
  END IF;
  RETURN NULL;
END $$;

-- Rows already settled that way go back to what they were.
UPDATE "intent_work" SET "state" = 'cancelled'
WHERE "state" IN ('failed', 'completed') AND "last_error" = 'moved on from RECEIVED outside the pipeline before a worker took it';
