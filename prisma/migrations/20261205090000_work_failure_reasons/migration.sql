-- An intent moved on from RECEIVED outside the pipeline has its waiting work row cancelled. When that intent later
-- reached COMPLETED or FAILED (an operator failing it, say), the cancelled row used to be settled again as
-- 'completed' or 'failed', still carrying the cancellation note, and the Workers page counted and listed it among the
-- pipeline's failures. The trigger function that decides this now lives with the other database functions
-- (prisma/functions/60_work_queue.sql), which leaves a cancelled row cancelled; this puts back the rows already
-- settled that way.
UPDATE "intent_work" SET "state" = 'cancelled'
WHERE "state" IN ('failed', 'completed') AND "last_error" = 'moved on from RECEIVED outside the pipeline before a worker took it';
