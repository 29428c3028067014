-- The BridgeSet pipeline and the workers that run it.
--
-- intent_work is the queue: one narrow row per intent that entered the pipeline, beside `intents` rather than in it,
-- so claims, heartbeats and retries never touch the intent's row (whose `version` drives corrections) and a claim
-- scans a small table through a partial index on the rows that are due.

CREATE TABLE "intent_work" (
    "intent_id"    UUID         NOT NULL,
    -- available: waiting to be claimed (due once run_after has passed); retryable: a failed or rescued attempt waiting
    -- for its retry; running: claimed; completed / failed: the intent reached COMPLETED / FAILED; cancelled: an
    -- operator cancelled the scheduled retry.
    "state"        VARCHAR(16)  NOT NULL DEFAULT 'available',
    -- One execution round per entry into RECEIVED (an operator's retry of a FAILED intent starts the next round);
    -- recorded steps are replayed within a round only.
    "round"        INTEGER      NOT NULL DEFAULT 1,
    "attempt"      INTEGER      NOT NULL DEFAULT 0,
    "max_attempts" INTEGER      NOT NULL DEFAULT 5,
    "run_after"    TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    -- From intent_work_claim_token_seq at each claim: every later write of the claim names it.
    "claim_token"  BIGINT,
    "claimed_by"   VARCHAR(255),
    "claimed_at"   TIMESTAMPTZ(3),
    "heartbeat_at" TIMESTAMPTZ(3),
    -- The database's clock decides when a claim is stale: lease_until < now().
    "lease_until"  TIMESTAMPTZ(3),
    "last_error"   TEXT,
    "rescues"      INTEGER      NOT NULL DEFAULT 0,
    "created_at"   TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "finished_at"  TIMESTAMPTZ(3),
    CONSTRAINT "intent_work_pkey" PRIMARY KEY ("intent_id"),
    CONSTRAINT "intent_work_intent_fkey" FOREIGN KEY ("intent_id") REFERENCES "intents"("id") ON DELETE CASCADE,
    CONSTRAINT "intent_work_state_check" CHECK ("state" IN ('available', 'retryable', 'running', 'completed', 'failed', 'cancelled'))
);

CREATE SEQUENCE "intent_work_claim_token_seq";

-- What a claim reads: only the rows that can be claimed, in the order they are claimed.
CREATE INDEX "intent_work_due_idx" ON "intent_work" ("run_after", "intent_id") WHERE "state" IN ('available', 'retryable');
-- What the rescuer reads.
CREATE INDEX "intent_work_running_idx" ON "intent_work" ("lease_until") WHERE "state" = 'running';
CREATE UNIQUE INDEX "intent_work_claim_token_key" ON "intent_work" ("claim_token");
CREATE INDEX "intent_work_state_idx" ON "intent_work" ("state");

-- Pause and resume claiming for every worker at once: one row; the claim statement reads it.
CREATE TABLE "worker_control" (
    "id"         BOOLEAN      NOT NULL DEFAULT true,
    "paused"     BOOLEAN      NOT NULL DEFAULT false,
    "changed_by" VARCHAR(255),
    "changed_at" TIMESTAMPTZ(3),
    CONSTRAINT "worker_control_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "worker_control_one_row" CHECK ("id")
);
INSERT INTO "worker_control" ("id", "paused") VALUES (true, false);

-- Every worker process registers itself, so any console instance can list them.
CREATE TABLE "workers" (
    "id"           UUID         NOT NULL,
    "name"         VARCHAR(255) NOT NULL,
    "host"         VARCHAR(255) NOT NULL,
    "pid"          INTEGER      NOT NULL,
    "concurrency"  INTEGER      NOT NULL,
    "in_flight"    INTEGER      NOT NULL DEFAULT 0,
    -- running | stopping | stopped (a worker that stops heartbeating is shown as lost)
    "state"        VARCHAR(16)  NOT NULL DEFAULT 'running',
    "started_at"   TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "stopped_at"   TIMESTAMPTZ(3),
    CONSTRAINT "workers_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "workers_heartbeat_idx" ON "workers" ("heartbeat_at" DESC);

-- Worker events per minute (claimed, completed, failed, retried, rescued), shared by every process: the Workers
-- page's throughput chart and the metrics' totals.
CREATE TABLE "worker_stats" (
    "minute" TIMESTAMPTZ(0) NOT NULL,
    "event"  VARCHAR(16)    NOT NULL,
    "count"  BIGINT         NOT NULL DEFAULT 0,
    CONSTRAINT "worker_stats_pkey" PRIMARY KEY ("minute", "event")
);

CREATE TABLE "pipeline_runs" (
    "id"          UUID         NOT NULL DEFAULT gen_random_uuid(),
    "intent_id"   UUID         NOT NULL,
    "round"       INTEGER      NOT NULL,
    -- FAILFAST | CONTINUE
    "mode"        VARCHAR(16)  NOT NULL,
    -- running | succeeded | failed | finished_with_errors (CONTINUE went past a failure) | interrupted (stopped
    -- between bridges, e.g. by SIGTERM) | abandoned (its process died; found by the rescuer or the next run)
    "status"      VARCHAR(24)  NOT NULL DEFAULT 'running',
    -- api | console | worker
    "door"        VARCHAR(16)  NOT NULL,
    "actor"       VARCHAR(255) NOT NULL,
    "claim_token" BIGINT,
    "started_at"  TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "finished_at" TIMESTAMPTZ(3),
    "error"       TEXT,
    CONSTRAINT "pipeline_runs_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "pipeline_runs_intent_fkey" FOREIGN KEY ("intent_id") REFERENCES "intents"("id") ON DELETE CASCADE
);
CREATE INDEX "pipeline_runs_intent_idx" ON "pipeline_runs" ("intent_id", "started_at" DESC);
CREATE INDEX "pipeline_runs_claim_idx" ON "pipeline_runs" ("claim_token") WHERE "status" = 'running';

CREATE TABLE "pipeline_steps" (
    "id"          BIGSERIAL    NOT NULL,
    "run_id"      UUID         NOT NULL,
    "intent_id"   UUID         NOT NULL,
    "round"       INTEGER      NOT NULL,
    "position"    INTEGER      NOT NULL,
    "bridge"      VARCHAR(64)  NOT NULL,
    -- running | completed | failed | skipped (the intent's status is not one the bridge runs on) | replayed (the
    -- round already recorded this bridge's result: it is not run again) | abandoned (its run died)
    "status"      VARCHAR(16)  NOT NULL,
    "claim_token" BIGINT,
    "started_at"  TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "finished_at" TIMESTAMPTZ(3),
    "result"      JSONB,
    "error"       TEXT,
    CONSTRAINT "pipeline_steps_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "pipeline_steps_run_fkey" FOREIGN KEY ("run_id") REFERENCES "pipeline_runs"("id") ON DELETE CASCADE
);
CREATE INDEX "pipeline_steps_run_idx" ON "pipeline_steps" ("run_id", "position");
-- What the rescuer reads to mark a rescued claim's unfinished steps abandoned.
CREATE INDEX "pipeline_steps_running_claim_idx" ON "pipeline_steps" ("claim_token") WHERE "status" = 'running';
-- A bridge completes at most once per intent and round: a second completion is refused by the database itself.
CREATE UNIQUE INDEX "pipeline_steps_done_once" ON "pipeline_steps" ("intent_id", "round", "bridge") WHERE "status" = 'completed';

-- The queue is fed by the intents themselves: a new RECEIVED intent is queued; an operator's retry (FAILED →
-- RECEIVED) queues the next round; an intent that reaches COMPLETED or FAILED by any door settles its waiting row
-- (a running row is settled by its worker, whose claim it is); an intent moved on from RECEIVED by someone else
-- before any worker took it is theirs now, and its waiting row is cancelled (a retryable row stays: the pipeline
-- resumes from wherever the intent is). Replay data never enters the queue.
CREATE FUNCTION "intent_work_enqueue"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO intent_work (intent_id) VALUES (NEW.id) ON CONFLICT (intent_id) DO NOTHING;
  RETURN NULL;
END $$;

CREATE FUNCTION "intent_work_follow_status"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 'RECEIVED' THEN
    INSERT INTO intent_work (intent_id) VALUES (NEW.id)
    ON CONFLICT (intent_id) DO UPDATE
      SET state = 'available', round = intent_work.round + 1, attempt = 0, run_after = now(), claimed_by = NULL,
          claimed_at = NULL, heartbeat_at = NULL, lease_until = NULL, last_error = NULL, finished_at = NULL;
  ELSIF NEW.status IN ('COMPLETED', 'FAILED') THEN
    UPDATE intent_work SET state = CASE WHEN NEW.status = 'COMPLETED' THEN 'completed' ELSE 'failed' END, finished_at = now()
    WHERE intent_id = NEW.id AND state IN ('available', 'retryable', 'cancelled');
  ELSE
    UPDATE intent_work SET state = 'cancelled', finished_at = now(), last_error = 'moved on from RECEIVED outside the pipeline before a worker took it'
    WHERE intent_id = NEW.id AND state = 'available';
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "intents_enqueue_work" AFTER INSERT ON "intents"
  FOR EACH ROW WHEN (NEW.status = 'RECEIVED' AND NOT NEW.is_replay) EXECUTE FUNCTION "intent_work_enqueue"();

CREATE TRIGGER "intents_work_follows_status" AFTER UPDATE OF "status" ON "intents"
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND (NEW.status IN ('RECEIVED', 'COMPLETED', 'FAILED') OR OLD.status = 'RECEIVED') AND NOT NEW.is_replay)
  EXECUTE FUNCTION "intent_work_follow_status"();

-- Intents already waiting when this arrives are queued too.
INSERT INTO "intent_work" ("intent_id") SELECT "id" FROM "intents" WHERE "status" = 'RECEIVED' AND NOT "is_replay";
