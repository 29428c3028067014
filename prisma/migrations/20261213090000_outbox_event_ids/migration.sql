-- Hand-written: every outbox event gets an id of its own, unique beyond this database. The bigint id is a sequence
-- every database starts at 1 (a fresh install, a staging reset, a restored backup, the other side of a blue/green
-- switch), so as a message id two databases publishing to one NATS reused each other's ids, and JetStream dropped
-- the second database's events as duplicates. A random UUID, drawn when the row is written and kept with it, is the
-- message id and the payload's `id`: a relay that publishes the row again sends the same id, so JetStream's
-- duplicate window still recognises a true repeat. Existing rows get one too (those not yet published go out under it).
ALTER TABLE "outbox_events" ADD COLUMN "event_id" UUID NOT NULL DEFAULT gen_random_uuid();
