-- Hand-written: a blocking episode takes its place in the intent timeline's write order. The sampler draws a
-- position from bridge_write_seq when it first records an episode, that is while the waiters still wait: the changes
-- the blocking delayed draw theirs later, and what was written before it began drew earlier ones. Episodes recorded
-- before this column existed keep no position and are placed by time.
ALTER TABLE "lock_episodes" ADD COLUMN "write_seq" BIGINT;
ALTER TABLE "lock_episodes" ALTER COLUMN "write_seq" SET DEFAULT nextval('bridge_write_seq');
