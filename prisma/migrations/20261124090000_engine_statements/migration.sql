-- CreateTable
CREATE TABLE "intent_contention" (
    "intent_id" UUID NOT NULL,
    "conflicts" BIGINT NOT NULL DEFAULT 0,
    "last_conflict_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "intent_contention_pkey" PRIMARY KEY ("intent_id")
);


-- Hand-written: the engine's commands are database functions now, kept in prisma/functions (re-applied by the
-- migration runner when they change). The locked-correction function they replace goes.
DROP FUNCTION IF EXISTS "bridge_correct_locked"(uuid, text, text, text, jsonb, text, text, jsonb, text, integer, text[], text[]);
