-- AlterTable
ALTER TABLE "replay_runs" ADD COLUMN     "pg_deadlocks_end" BIGINT,
ADD COLUMN     "pg_deadlocks_start" BIGINT,
ADD COLUMN     "pg_stats_reset_end" TIMESTAMPTZ(3),
ADD COLUMN     "pg_stats_reset_start" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "lock_wait_timeouts" (
    "minute" TIMESTAMPTZ(0) NOT NULL,
    "operation" VARCHAR(64) NOT NULL,
    "timeout_ms" INTEGER NOT NULL,
    "is_replay" BOOLEAN NOT NULL DEFAULT false,
    "count" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "lock_wait_timeouts_pkey" PRIMARY KEY ("minute","operation","timeout_ms","is_replay")
);

-- CreateTable
CREATE TABLE "intent_outcome_minutes" (
    "outcome" VARCHAR(64) NOT NULL,
    "minute" TIMESTAMPTZ(0) NOT NULL,
    "operation" VARCHAR(64) NOT NULL,
    "intent_id" UUID NOT NULL,
    "count" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "intent_outcome_minutes_pkey" PRIMARY KEY ("outcome","minute","operation","intent_id")
);

-- CreateIndex
CREATE INDEX "intent_outcome_minutes_minute_idx" ON "intent_outcome_minutes"("minute");

