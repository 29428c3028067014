-- The fence of a worker's claim on an intent (docs/LEASES.md, "Workers' runs are fenced by their claim"): granted by
-- the claim statement, removed by every statement that ends the claim. The engine's fencing input names it too
-- (CLAIM_FENCE_PREFIX, lib/leases/schemas.ts).
CREATE OR REPLACE FUNCTION "bridge_claim_fence_resource"(p_intent_id uuid) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT 'worker-claim:' || p_intent_id::text $$;

-- The work queue follows the intents (trigger "intents_work_follows_status", docs/WORKERS.md): an intent back at
-- RECEIVED (an operator's retry of a FAILED intent) queues its next round; one that reaches COMPLETED or FAILED by
-- any door settles its waiting row (a running row is settled by its worker, whose claim it is); one moved on from
-- RECEIVED by someone else before any worker took it is theirs now, and its waiting row is cancelled. A cancelled
-- row stays cancelled whatever the intent does next, short of coming back to RECEIVED: the pipeline never ran it, so
-- it is neither counted nor listed among the pipeline's failures. An intent that leaves the pipeline's round this
-- way (back to RECEIVED, or COMPLETED or FAILED) while a bridge waits for an answer has that wait cancelled: an answer
-- arriving later is too late, and no worker wakes for it.
--
-- Back at RECEIVED, a row still `running` is a worker's claim that did not end yet (a run that failed its intent,
-- which an operator retried before the run's close): the reset takes it from that worker, which ends its fence (the
-- trigger below), so the worker's later writes — its close, or the FAILED mark of a last attempt — are refused instead
-- of undoing the retry.
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

-- A claim that stops running ends its fence: whatever statement ends it (a run's close, a settlement, a suspension to
-- wait for an answer, the rescuer, an operator's retry resetting the row), the fence holding the claim's token is
-- removed in the same transaction, and a fence that holds nothing refuses every token. From that commit on no write
-- carrying the token is accepted, whoever sends it — a worker whose claim was rescued while it still ran included —
-- until the next claim grants its own. The removal waits for a write holding the fence row (bridge_fence_accept),
-- so that write lands before the claim's end, never after it; the work row is already locked by then, the order the
-- workers' own statements take the two in. Written here once, for every statement, rather than in each of them. The
-- condition is tested before any function runs, so heartbeats and claims, which keep or start `running`, pay nothing.
CREATE OR REPLACE FUNCTION "intent_work_claim_ended"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM lease_fences f WHERE f.resource = "bridge_claim_fence_resource"(OLD.intent_id) AND f.token = OLD.claim_token;
  RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS "intent_work_claim_ended" ON "intent_work";
CREATE TRIGGER "intent_work_claim_ended" AFTER UPDATE ON "intent_work"
  FOR EACH ROW WHEN (OLD.state = 'running' AND (NEW.state <> 'running' OR NEW.claim_token IS DISTINCT FROM OLD.claim_token))
  EXECUTE FUNCTION "intent_work_claim_ended"();
