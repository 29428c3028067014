-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "IntentStatus" AS ENUM ('RECEIVED', 'NORMALIZED', 'PROCESSED', 'CORRECTED', 'COMPLETED', 'FAILED');

-- CreateTable
CREATE TABLE "intents" (
    "id" UUID NOT NULL,
    "status" "IntentStatus" NOT NULL DEFAULT 'RECEIVED',
    "payload" JSONB NOT NULL,
    "source" VARCHAR(255) NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 0,
    "is_replay" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "intents_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "corrections" (
    "id" BIGSERIAL NOT NULL,
    "intent_id" UUID NOT NULL,
    "correction_id" VARCHAR(64) NOT NULL,
    "diff" JSONB NOT NULL,
    "source" VARCHAR(255) NOT NULL,
    "reason" TEXT NOT NULL,
    "metadata" JSONB,
    "actor" VARCHAR(255) NOT NULL,
    "version_before" INTEGER NOT NULL,
    "version_after" INTEGER NOT NULL,
    "status_before" "IntentStatus" NOT NULL,
    "status_after" "IntentStatus" NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "corrections_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_events" (
    "id" BIGSERIAL NOT NULL,
    "intent_id" UUID,
    "action" VARCHAR(64) NOT NULL,
    "actor" VARCHAR(255) NOT NULL,
    "from_status" "IntentStatus",
    "to_status" "IntentStatus",
    "version_before" INTEGER,
    "version_after" INTEGER,
    "details" JSONB,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "tx_id" BIGINT NOT NULL DEFAULT ((pg_current_xact_id())::text)::bigint,

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "conflict_events" (
    "id" BIGSERIAL NOT NULL,
    "intent_id" UUID NOT NULL,
    "operation" VARCHAR(64) NOT NULL,
    "expected_version" INTEGER NOT NULL,
    "current_version" INTEGER NOT NULL,
    "reason" TEXT NOT NULL,
    "actor" VARCHAR(255) NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "conflict_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "idempotency_records" (
    "key" VARCHAR(255) NOT NULL,
    "operation" VARCHAR(64) NOT NULL,
    "request_hash" VARCHAR(64) NOT NULL,
    "state" VARCHAR(16) NOT NULL,
    "response_status" INTEGER,
    "response_body" JSONB,
    "locked_until" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "idempotency_records_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "deadlock_events" (
    "id" BIGSERIAL NOT NULL,
    "operation" VARCHAR(64) NOT NULL,
    "intent_ids" UUID[],
    "detail" TEXT NOT NULL,
    "attempt" INTEGER NOT NULL,
    "retried" BOOLEAN NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "deadlock_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "outcome_counts" (
    "minute" TIMESTAMPTZ(0) NOT NULL,
    "operation" VARCHAR(64) NOT NULL,
    "transition" VARCHAR(64) NOT NULL DEFAULT '',
    "outcome" VARCHAR(64) NOT NULL,
    "count" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "outcome_counts_pkey" PRIMARY KEY ("minute","operation","transition","outcome")
);

-- CreateTable
CREATE TABLE "lock_wait_buckets" (
    "minute" TIMESTAMPTZ(0) NOT NULL,
    "operation" VARCHAR(64) NOT NULL,
    "le_ms" INTEGER NOT NULL,
    "count" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "lock_wait_buckets_pkey" PRIMARY KEY ("minute","operation","le_ms")
);

-- CreateIndex
CREATE INDEX "intents_list_idx" ON "intents"("is_replay", "updated_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "intents_status_list_idx" ON "intents"("is_replay", "status", "updated_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "corrections_intent_idx" ON "corrections"("intent_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "corrections_intent_correction_key" ON "corrections"("intent_id", "correction_id");

-- CreateIndex
CREATE INDEX "audit_events_intent_idx" ON "audit_events"("intent_id", "id");

-- CreateIndex
CREATE INDEX "audit_events_at_idx" ON "audit_events"("at");

-- CreateIndex
CREATE INDEX "conflict_events_intent_idx" ON "conflict_events"("intent_id", "id");

-- CreateIndex
CREATE INDEX "conflict_events_at_idx" ON "conflict_events"("at");

-- CreateIndex
CREATE INDEX "idempotency_records_expires_idx" ON "idempotency_records"("expires_at");

-- CreateIndex
CREATE INDEX "deadlock_events_at_idx" ON "deadlock_events"("at");

-- CreateIndex
CREATE INDEX "outcome_counts_minute_idx" ON "outcome_counts"("minute");

-- AddForeignKey
ALTER TABLE "corrections" ADD CONSTRAINT "corrections_intent_id_fkey" FOREIGN KEY ("intent_id") REFERENCES "intents"("id") ON DELETE CASCADE ON UPDATE CASCADE;


-- Hand-written: what Prisma's schema language cannot say.

-- Text search over the payload at 100,000 intents: trigram index on the JSON text.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX "intents_payload_trgm_idx" ON "intents" USING GIN (("payload"::text) gin_trgm_ops);

-- The audit log is append-only.
CREATE FUNCTION "audit_events_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_events is append-only' USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER "audit_events_no_update" BEFORE UPDATE OR DELETE ON "audit_events"
  FOR EACH ROW EXECUTE FUNCTION "audit_events_append_only"();

-- Every committed change is announced to the live console (delivered at commit, in commit order).
CREATE FUNCTION "audit_events_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('bridge_changes', json_build_object(
    'id', NEW."id", 'intentId', NEW."intent_id", 'action', NEW."action", 'toStatus', NEW."to_status")::text);
  RETURN NEW;
END $$;
CREATE TRIGGER "audit_events_notify" AFTER INSERT ON "audit_events"
  FOR EACH ROW EXECUTE FUNCTION "audit_events_notify"();
