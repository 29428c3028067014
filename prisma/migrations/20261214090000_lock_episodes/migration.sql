-- Hand-written: the lock history. One sampler per database (lib/locks/history/sampler.ts) reads the blocking graph
-- and keeps, per root blocker (its pid, backend start and transaction start), an episode: when it started and ended,
-- the root, every waiter seen, the peak, the locks involved, and the tree each time it changed.

CREATE TABLE "lock_episodes" (
    "id" BIGSERIAL NOT NULL,
    "root_pid" INTEGER NOT NULL,
    "root_backend_start" TIMESTAMPTZ(6) NOT NULL,
    -- NULL for a root that holds a session-level lock outside any transaction.
    "root_xact_start" TIMESTAMPTZ(6),
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL,
    "ended_at" TIMESTAMPTZ(3),
    "samples" INTEGER NOT NULL DEFAULT 1,
    "peak_waiters" INTEGER NOT NULL,
    "peak_at" TIMESTAMPTZ(3) NOT NULL,
    "peak_tree" JSONB NOT NULL,
    "root" JSONB NOT NULL,
    "waiters" JSONB NOT NULL DEFAULT '[]',
    "locks" JSONB NOT NULL DEFAULT '[]',
    "intent_ids" UUID[] NOT NULL DEFAULT '{}',
    "applications" TEXT[] NOT NULL DEFAULT '{}',

    CONSTRAINT "lock_episodes_pkey" PRIMARY KEY ("id")
);

-- At most one episode in progress per root blocker's transaction: a sampler that takes over continues it instead of
-- opening another. (An expression rather than NULLS NOT DISTINCT, which needs PostgreSQL 15.) The same transaction
-- blocking again after its episode ended opens a new one.
CREATE UNIQUE INDEX "lock_episodes_open_root_key" ON "lock_episodes"("root_pid", "root_backend_start", COALESCE("root_xact_start", '-infinity'))
  WHERE "ended_at" IS NULL;
CREATE INDEX "lock_episodes_root_idx" ON "lock_episodes"("root_pid", "root_backend_start");
CREATE INDEX "lock_episodes_started_idx" ON "lock_episodes"("started_at", "id");
CREATE INDEX "lock_episodes_open_idx" ON "lock_episodes"("id") WHERE "ended_at" IS NULL;
CREATE INDEX "lock_episodes_ended_idx" ON "lock_episodes"("ended_at");

-- The intents an episode was about, and how: the root held them, or a waiter waited on them.
CREATE TABLE "lock_episode_intents" (
    "intent_id" UUID NOT NULL,
    "episode_id" BIGINT NOT NULL,
    "role" VARCHAR(8) NOT NULL,

    CONSTRAINT "lock_episode_intents_pkey" PRIMARY KEY ("intent_id", "episode_id", "role"),
    CONSTRAINT "lock_episode_intents_episode_fkey" FOREIGN KEY ("episode_id") REFERENCES "lock_episodes"("id") ON DELETE CASCADE
);
CREATE INDEX "lock_episode_intents_episode_idx" ON "lock_episode_intents"("episode_id");

-- The tree as it was: one row each time it changed (a sample that saw the same tree as the last one writes nothing).
CREATE TABLE "lock_episode_samples" (
    "episode_id" BIGINT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "waiters" INTEGER NOT NULL,
    "tree" JSONB NOT NULL,

    CONSTRAINT "lock_episode_samples_pkey" PRIMARY KEY ("episode_id", "at"),
    CONSTRAINT "lock_episode_samples_episode_fkey" FOREIGN KEY ("episode_id") REFERENCES "lock_episodes"("id") ON DELETE CASCADE
);

-- A storm (more new root blockers in a minute than are written one by one) is summarised per minute.
CREATE TABLE "lock_episode_storms" (
    "minute" TIMESTAMPTZ(0) NOT NULL,
    "episodes" INTEGER NOT NULL DEFAULT 0,
    "peak_waiters" INTEGER NOT NULL DEFAULT 0,
    "applications" TEXT[] NOT NULL DEFAULT '{}',

    CONSTRAINT "lock_episode_storms_pkey" PRIMARY KEY ("minute")
);

-- Ended episodes by duration bucket (upper bound in ms, -1 for longer than the last) for /api/metrics: counts that
-- only grow, whatever the retention deletes. Storm-summarised episodes are counted under -2.
CREATE TABLE "lock_episode_totals" (
    "le_ms" INTEGER NOT NULL,
    "count" BIGINT NOT NULL DEFAULT 0,
    "sum_ms" DOUBLE PRECISION NOT NULL DEFAULT 0,

    CONSTRAINT "lock_episode_totals_pkey" PRIMARY KEY ("le_ms")
);
