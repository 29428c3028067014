-- CreateTable
CREATE TABLE "backend_actors" (
    "key" BIGINT NOT NULL,
    "name" VARCHAR(255) NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "backend_actors_pkey" PRIMARY KEY ("key","name")
);
