-- AlterTable
ALTER TABLE "idempotency_records" DROP CONSTRAINT "idempotency_records_pkey",
ADD COLUMN     "scope" VARCHAR(255) NOT NULL DEFAULT '',
ADD CONSTRAINT "idempotency_records_pkey" PRIMARY KEY ("scope", "key");


-- Hand-written note: keys recorded before this migration keep scope '' and match no caller, so a repeat that
-- straddles the upgrade does the work again; the engine then answers it as already applied (the status is already
-- the target; the correction id already exists), so nothing is applied twice.
