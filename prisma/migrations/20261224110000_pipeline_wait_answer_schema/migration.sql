-- What a wait accepts as its answer, when its bridge says (a JSON Schema written from the bridge's Zod schema): an
-- answer that does not match is refused with 400 naming the field before anything is recorded, and callers read it
-- beside the prompt. Null for waits that take any JSON object, as every wait did before.
ALTER TABLE "pipeline_waits" ADD COLUMN "answer_schema" JSONB;
