-- A pinned baseline: the replay run a release engineer chose for later runs to be compared with (a release's
-- accepted figures), instead of whichever run happened to finish last. Who pinned it, when, and why.
ALTER TABLE "replay_runs" ADD COLUMN "pinned_at" TIMESTAMPTZ(3),
                          ADD COLUMN "pinned_by" VARCHAR(255),
                          ADD COLUMN "pin_note" VARCHAR(200);

-- One pinned baseline at a time (Prisma's schema language cannot say this): pinning another run moves the pin.
CREATE UNIQUE INDEX "replay_runs_one_baseline" ON "replay_runs" ((true)) WHERE "pinned_at" IS NOT NULL;
