-- The intents still waiting (not COMPLETED), oldest change first: the Intents page's stuck view and its "oldest
-- waiting" age read this index from its start, so they cost the same however many COMPLETED intents lie behind
-- them. Partial, so it holds only the intents still in flight.
CREATE INDEX "intents_waiting_idx" ON "intents" ("updated_at", "id") WHERE "is_replay" = false AND "status" <> 'COMPLETED';
