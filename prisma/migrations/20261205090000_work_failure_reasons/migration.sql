-- An intent moved on from RECEIVED outside the pipeline has its waiting work row cancelled with a note saying so.
-- When that intent later reached FAILED (an operator failing it, say), the row was settled as 'failed' but kept the
-- note, so the Workers page listed it among the pipeline's failures with "moved on from RECEIVED outside the
-- pipeline…" as the reason. The pipeline never ran it: the row now settles without a reason (the intent's audit
-- trail says who failed it and why), and the Workers page's failures are the pipeline's own.
CREATE OR REPLACE FUNCTION "intent_work_follow_status"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 'RECEIVED' THEN
    INSERT INTO intent_work (intent_id) VALUES (NEW.id)
    ON CONFLICT (intent_id) DO UPDATE
      SET state = 'available', round = intent_work.round + 1, attempt = 0, run_after = now(), claimed_by = NULL,
          claimed_at = NULL, heartbeat_at = NULL, lease_until = NULL, last_error = NULL, finished_at = NULL;
  ELSIF NEW.status IN ('COMPLETED', 'FAILED') THEN
    UPDATE intent_work
    SET state = CASE WHEN NEW.status = 'COMPLETED' THEN 'completed' ELSE 'failed' END, finished_at = now(),
        last_error = CASE WHEN state = 'cancelled' THEN NULL ELSE last_error END
    WHERE intent_id = NEW.id AND state IN ('available', 'retryable', 'cancelled');
  ELSE
    UPDATE intent_work SET state = 'cancelled', finished_at = now(), last_error = 'moved on from RECEIVED outside the pipeline before a worker took it'
    WHERE intent_id = NEW.id AND state = 'available';
  END IF;
  RETURN NULL;
END $$;

-- Rows already settled that way.
UPDATE "intent_work" SET "last_error" = NULL
WHERE "state" IN ('failed', 'completed') AND "last_error" = 'moved on from RECEIVED outside the pipeline before a worker took it';
