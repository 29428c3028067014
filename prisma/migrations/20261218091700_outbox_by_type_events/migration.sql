-- Hand-written: the Events page browses the outbox newest first, optionally of one type (lib/events/recent.ts). By
-- type, neither the primary key nor the relays' partial indexes serve it: a rare type (or one with no rows at all)
-- would walk every row kept (72 hours of events by default). With (subject, id) a page of one type is one backward
-- range scan, and the page after it continues from its last id.
CREATE INDEX "outbox_events_subject_idx" ON "outbox_events" ("subject", "id");
