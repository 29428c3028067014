-- The global audit page reads audit_events and auth_events newest first, filtered by actor, action or intent and
-- paged by (at, id). Each filter gets an index that ends in (at, id), so every page is one index range scan however
-- many rows the tables hold.
CREATE INDEX "audit_events_at_id_idx" ON "audit_events" ("at", "id");
CREATE INDEX "audit_events_actor_at_idx" ON "audit_events" ("actor", "at", "id");
CREATE INDEX "audit_events_action_at_idx" ON "audit_events" ("action", "at", "id");
CREATE INDEX "audit_events_intent_at_idx" ON "audit_events" ("intent_id", "at", "id");
CREATE INDEX "auth_events_at_id_idx" ON "auth_events" ("at", "id");
CREATE INDEX "auth_events_actor_at_idx" ON "auth_events" ("actor", "at", "id");
CREATE INDEX "auth_events_action_at_idx" ON "auth_events" ("action", "at", "id");
