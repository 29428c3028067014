-- A console bulk batch: "move everything matching this filter", run server-side in sorted-lock chunks. The row is
-- the batch's state, shared by every console instance: progress, a cancel request, and a heartbeat, so a batch
-- whose runner stopped (a restart, a crash) is taken over by another instance and resumes after its cursor.
CREATE TABLE "bulk_batches" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "status" VARCHAR(16) NOT NULL,
    "to_status" "IntentStatus" NOT NULL,
    "filter" JSONB NOT NULL,
    "reason" TEXT,
    "requested_by" VARCHAR(255) NOT NULL,
    "planned" INTEGER NOT NULL,
    "moved" INTEGER NOT NULL DEFAULT 0,
    "skipped" INTEGER NOT NULL DEFAULT 0,
    "cursor" UUID,
    "cancel_requested" BOOLEAN NOT NULL DEFAULT false,
    "cancelled_by" VARCHAR(255),
    "error" TEXT,
    "runner" VARCHAR(255),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "finished_at" TIMESTAMPTZ(3),
    CONSTRAINT "bulk_batches_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "bulk_batches_status_check" CHECK ("status" IN ('running', 'finished', 'cancelled', 'failed'))
);
CREATE INDEX "bulk_batches_running_idx" ON "bulk_batches" ("heartbeat_at") WHERE "status" = 'running';
CREATE INDEX "bulk_batches_created_idx" ON "bulk_batches" ("created_at" DESC);
