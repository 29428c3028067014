-- A correction applied again after a later change undid it is written as "<correction id>@<version>"
-- (bridge_correction_repeats, prisma/functions/30_correct.sql): 64 hex characters, "@" and up to 10 digits.
-- Widening a varchar changes no stored row and rebuilds no index.
ALTER TABLE "corrections" ALTER COLUMN "correction_id" SET DATA TYPE VARCHAR(80);
