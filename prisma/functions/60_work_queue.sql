-- The work queue follows the intents (trigger "intents_work_follows_status", docs/WORKERS.md): an intent back at
-- RECEIVED (an operator's retry of a FAILED intent) queues its next round; one that reaches COMPLETED or FAILED by
-- any door settles its waiting row (a running row is settled by its worker, whose claim it is); one moved on from
-- RECEIVED by someone else before any worker took it is theirs now, and its waiting row is cancelled. A cancelled
-- row stays cancelled whatever the intent does next, short of coming back to RECEIVED: the pipeline never ran it, so
-- it is neither counted nor listed among the pipeline's failures. An intent that leaves the pipeline's round this
-- way (back to RECEIVED, or COMPLETED or FAILED) while a bridge waits for an answer has that wait cancelled: an answer
-- arriving later is too late, and no worker wakes for it.
CREATE OR REPLACE FUNCTION "intent_work_follow_status"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status IN ('RECEIVED', 'COMPLETED', 'FAILED') THEN
    UPDATE pipeline_waits SET state = 'cancelled', decided_at = now() WHERE intent_id = NEW.id AND state = 'waiting';
  END IF;
  IF NEW.status = 'RECEIVED' THEN
    -- An intent without a row yet (made in another status, or older than the queue) may have runs already: its
    -- next round comes after theirs, so nothing they recorded is replayed into it.
    INSERT INTO intent_work (intent_id, round)
    VALUES (NEW.id, 1 + COALESCE((SELECT max(r.round) FROM pipeline_runs r WHERE r.intent_id = NEW.id), 0))
    ON CONFLICT (intent_id) DO UPDATE
      SET state = 'available', round = intent_work.round + 1, attempt = 0, run_after = now(), claimed_by = NULL,
          claimed_at = NULL, heartbeat_at = NULL, lease_until = NULL, last_error = NULL, finished_at = NULL;
  ELSIF NEW.status IN ('COMPLETED', 'FAILED') THEN
    UPDATE intent_work SET state = CASE WHEN NEW.status = 'COMPLETED' THEN 'completed' ELSE 'failed' END, finished_at = now()
    WHERE intent_id = NEW.id AND state IN ('available', 'retryable', 'waiting');
  ELSE
    UPDATE intent_work SET state = 'cancelled', finished_at = now(), last_error = 'moved on from RECEIVED outside the pipeline before a worker took it'
    WHERE intent_id = NEW.id AND state = 'available';
  END IF;
  RETURN NULL;
END $$;
