-- The live feed (lib/live) re-reads audit events by writing transaction: the ones still in progress at the last
-- snapshot (tx_id = ANY(xip)) and, on resume, every transaction since the oldest one then running (tx_id >= xmin).
CREATE INDEX "audit_events_tx_idx" ON "audit_events"("tx_id");
