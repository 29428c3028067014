-- audit_events had two indexes led by intent_id: (intent_id, id) and (intent_id, at, id). Every per-intent read
-- (the intent's history and timeline, the invariant checks) finds its rows through either, and one intent's rows are
-- few enough to sort, so the second serves them all. Each index costs every audit insert a write, and audit inserts
-- are close to half of what a worker's run writes to the log (docs/WORKERS.md, "Benchmark").
DROP INDEX IF EXISTS "audit_events_intent_idx";
