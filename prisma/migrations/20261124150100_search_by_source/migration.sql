-- CreateIndex
CREATE INDEX "intents_source_list_idx" ON "intents"("is_replay", "source", "updated_at" DESC, "id" DESC);
