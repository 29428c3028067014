-- Waits for an answer from outside (docs/WORKERS.md, "Waits"). A bridge may suspend its run until an answer arrives
-- or a deadline passes; meanwhile its intent's work row is `waiting` and holds no claim, lease or connection.
ALTER TABLE "intent_work" DROP CONSTRAINT "intent_work_state_check";
ALTER TABLE "intent_work" ADD CONSTRAINT "intent_work_state_check"
  CHECK ("state" IN ('available', 'retryable', 'running', 'waiting', 'completed', 'failed', 'cancelled'));

-- One row per wait a bridge opened. `state` is decided once, by whoever takes the row first from `waiting`: an
-- answer (answered), the workers' deadline firing (timed_out), or the intent leaving the pipeline (cancelled).
-- `resumed_at` is set once, by the run that consumed the decision.
CREATE TABLE "pipeline_waits" (
    "id" BIGSERIAL NOT NULL,
    "intent_id" UUID NOT NULL,
    "round" INTEGER NOT NULL,
    "bridge" VARCHAR(64) NOT NULL,
    "name" VARCHAR(64) NOT NULL,
    "prompt" TEXT,
    "run_id" UUID,
    "claim_token" BIGINT,
    "state" VARCHAR(16) NOT NULL DEFAULT 'waiting',
    "deadline" TIMESTAMPTZ(3) NOT NULL,
    "on_timeout" VARCHAR(16) NOT NULL,
    "default_answer" JSONB,
    "answer" JSONB,
    "answered_by" VARCHAR(255),
    "decided_at" TIMESTAMPTZ(3),
    "resumed_at" TIMESTAMPTZ(3),
    "resumed_by" VARCHAR(255),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "pipeline_waits_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "pipeline_waits_intent_fkey" FOREIGN KEY ("intent_id") REFERENCES "intents"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "pipeline_waits_state_check" CHECK ("state" IN ('waiting', 'answered', 'timed_out', 'cancelled')),
    CONSTRAINT "pipeline_waits_on_timeout_check" CHECK ("on_timeout" IN ('fail', 'retry', 'continue'))
);
-- An intent waits for one thing at a time.
CREATE UNIQUE INDEX "pipeline_waits_open_once" ON "pipeline_waits" ("intent_id") WHERE "state" = 'waiting';
CREATE INDEX "pipeline_waits_step_idx" ON "pipeline_waits" ("intent_id", "name", "id");
-- The workers' deadline firing reads the open waits by deadline.
CREATE INDEX "pipeline_waits_deadline_idx" ON "pipeline_waits" ("deadline") WHERE "state" = 'waiting';

-- Every answer that arrived, with what became of it: the one that decided its wait (accepted), a repeat of it
-- (already_applied), a different one after it (conflict), or one after the wait was decided otherwise (too_late).
CREATE TABLE "pipeline_wait_answers" (
    "id" BIGSERIAL NOT NULL,
    "wait_id" BIGINT NOT NULL,
    "intent_id" UUID NOT NULL,
    "body" JSONB NOT NULL,
    "actor" VARCHAR(255) NOT NULL,
    "outcome" VARCHAR(16) NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "pipeline_wait_answers_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "pipeline_wait_answers_wait_fkey" FOREIGN KEY ("wait_id") REFERENCES "pipeline_waits"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "pipeline_wait_answers_outcome_check" CHECK ("outcome" IN ('accepted', 'already_applied', 'conflict', 'too_late'))
);
-- A wait is decided by one answer at most, whatever the interleaving.
CREATE UNIQUE INDEX "pipeline_wait_answers_one_accepted" ON "pipeline_wait_answers" ("wait_id") WHERE "outcome" = 'accepted';
CREATE INDEX "pipeline_wait_answers_wait_idx" ON "pipeline_wait_answers" ("wait_id", "id");
