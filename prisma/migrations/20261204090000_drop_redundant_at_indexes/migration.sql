-- audit_events(at) and auth_events(at) are prefixes of the (at, id) indexes the audit page added: every query the
-- one-column indexes served, the two-column ones serve as well. Keeping both cost every audit insert an extra index
-- write, and gave the planner a worse choice for the audit page (newest first by `at` alone, then a sort on `id`).
DROP INDEX IF EXISTS "audit_events_at_idx";
DROP INDEX IF EXISTS "auth_events_at_idx";
