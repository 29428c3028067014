-- Hand-written: what the intent timeline (lib/timeline) needs besides the tables of record.

-- One order for rows written to different tables: each row the timeline reads draws write_seq from this one
-- sequence when it is inserted, so the rows one transaction writes keep the order they were written in (an audit
-- row before the outbox event its trigger adds), and the transactions that change one intent — serialised by its
-- row lock — keep theirs, where their clocks (now(), the transaction's start, to the millisecond) could tie or
-- disagree. Rows from before this migration keep a NULL and are ordered by their time.
CREATE SEQUENCE "bridge_write_seq";

-- What the engine saw happen to an intent without changing it, so the intent's timeline has it: lock waits worth
-- recording (acquired after waiting at least bridge_lock_wait_floor_ms(), written by the command's own statement),
-- lock timeouts and NOWAIT refusals (written after the refused transaction rolled back), idempotent repeats and
-- fenced writes refused. No foreign key: the engine's hot path does not pay for a check on every recorded wait.
-- Pruned by housekeeping (INTENT_ENGINE_EVENTS_RETENTION_DAYS).
CREATE TABLE "intent_engine_events" (
    "id" BIGSERIAL NOT NULL,
    "intent_id" UUID NOT NULL,
    -- lock_wait | lock_timeout | idempotent_repeat | fence_refused
    "kind" VARCHAR(32) NOT NULL,
    "operation" VARCHAR(64) NOT NULL,
    "actor" VARCHAR(255),
    "waited_ms" DOUBLE PRECISION,
    -- For the lock kinds: acquired | timed_out | refused (NOWAIT).
    "outcome" VARCHAR(16),
    -- The backend that held the lock, when the engine knew it (a timeout or a refusal names its holder).
    "holder_pid" INTEGER,
    "details" JSONB,
    -- The time of the transaction that saw it: the same now() as the rows the command wrote.
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "write_seq" BIGINT DEFAULT nextval('bridge_write_seq'::regclass),
    CONSTRAINT "intent_engine_events_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "intent_engine_events_intent_idx" ON "intent_engine_events" ("intent_id", "id");
CREATE INDEX "intent_engine_events_at_idx" ON "intent_engine_events" ("at");

-- The intent timeline reads an intent's events sent out by their ordering key (the intent id).
CREATE INDEX "outbox_events_ordering_key_idx" ON "outbox_events" ("ordering_key", "id");

-- The tables of record the timeline merges. Two statements each: the column is added empty (no table rewrite),
-- then new rows draw from the sequence.
ALTER TABLE "audit_events" ADD COLUMN "write_seq" BIGINT;
ALTER TABLE "audit_events" ALTER COLUMN "write_seq" SET DEFAULT nextval('bridge_write_seq'::regclass);
ALTER TABLE "corrections" ADD COLUMN "write_seq" BIGINT;
ALTER TABLE "corrections" ALTER COLUMN "write_seq" SET DEFAULT nextval('bridge_write_seq'::regclass);
ALTER TABLE "conflict_events" ADD COLUMN "write_seq" BIGINT;
ALTER TABLE "conflict_events" ALTER COLUMN "write_seq" SET DEFAULT nextval('bridge_write_seq'::regclass);
ALTER TABLE "lease_events" ADD COLUMN "write_seq" BIGINT;
ALTER TABLE "lease_events" ALTER COLUMN "write_seq" SET DEFAULT nextval('bridge_write_seq'::regclass);
ALTER TABLE "outbox_events" ADD COLUMN "write_seq" BIGINT;
ALTER TABLE "outbox_events" ALTER COLUMN "write_seq" SET DEFAULT nextval('bridge_write_seq'::regclass);
