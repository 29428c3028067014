-- AlterTable
ALTER TABLE "lock_wait_buckets" ADD COLUMN     "sum_ms" DOUBLE PRECISION NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "replay_runs" (
    "id" UUID NOT NULL,
    "status" VARCHAR(16) NOT NULL,
    "verdict" VARCHAR(8),
    "door" VARCHAR(16) NOT NULL,
    "requested_by" VARCHAR(255) NOT NULL,
    "environment" VARCHAR(16) NOT NULL,
    "scenarios" TEXT[],
    "config" JSONB NOT NULL,
    "progress" JSONB NOT NULL,
    "results" JSONB NOT NULL DEFAULT '[]',
    "error" TEXT,
    "cancel_requested" BOOLEAN NOT NULL DEFAULT false,
    "cancelled_by" VARCHAR(255),
    "runner" VARCHAR(255) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "replay_runs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "replay_runs_created_idx" ON "replay_runs"("created_at" DESC);


-- One replay at a time, whichever console instance or CLI starts it (Prisma's schema language cannot say this).
CREATE UNIQUE INDEX "replay_runs_one_running" ON "replay_runs" ((true)) WHERE "status" = 'running';
