-- The run a worker's claim will record, named at the claim: the run's rows are written by its first write (often its
-- close, in one statement), not by the claim, so until then the claim is where the console reads the running run and
-- where the rescuer finds the id of a run to record as abandoned (docs/WORKERS.md, "A run recorded at its first
-- write"). Null for a claim that opens no run (an exhausted one, or a claim made without a bridge set).
ALTER TABLE "intent_work" ADD COLUMN "run_id" UUID;
