-- The live feed's wake-up leaves the writing transaction: the engine notifies after its commits (lib/live/announce.ts).
-- A transaction that calls pg_notify takes a database-wide lock at commit and holds it through its WAL flush, which
-- serialised every write's commit behind every other's (measured in docs/REPLAY.md). Notifications were, and stay,
-- only wake-ups: each live hub reads what committed from audit_events itself, and also every second on its own.
DROP TRIGGER "audit_events_notify" ON "audit_events";
DROP FUNCTION "audit_events_notify"();
