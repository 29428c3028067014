-- AlterTable
ALTER TABLE "deadlock_events" ADD COLUMN     "is_replay" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "outcome_counts" DROP CONSTRAINT "outcome_counts_pkey",
ADD COLUMN     "is_replay" BOOLEAN NOT NULL DEFAULT false,
ADD CONSTRAINT "outcome_counts_pkey" PRIMARY KEY ("minute", "operation", "transition", "outcome", "is_replay");

-- AlterTable
ALTER TABLE "lock_wait_buckets" DROP CONSTRAINT "lock_wait_buckets_pkey",
ADD COLUMN     "is_replay" BOOLEAN NOT NULL DEFAULT false,
ADD CONSTRAINT "lock_wait_buckets_pkey" PRIMARY KEY ("minute", "operation", "le_ms", "is_replay");


-- Hand-written: what the contention replay recorded before this column existed, where it can be told apart — the
-- deadlocks of replay intents, and the operations only the replay performs (the pipeline stand-in and the
-- crossing-order transaction). Replay calls of the engine's own commands before this migration stay counted as live.
UPDATE "deadlock_events" d SET "is_replay" = true
WHERE EXISTS (SELECT 1 FROM "intents" i WHERE i."id" = ANY (d."intent_ids") AND i."is_replay");
UPDATE "outcome_counts" SET "is_replay" = true WHERE "operation" IN ('pipeline_execute', 'replay_crossing_order');
UPDATE "lock_wait_buckets" SET "is_replay" = true WHERE "operation" IN ('pipeline_execute', 'replay_crossing_order');
