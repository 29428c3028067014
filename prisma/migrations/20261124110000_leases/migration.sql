-- Hand-written: lease locks with fencing tokens (lib/leases), and dedup keys with a time to live.

-- One row per resource ever leased. The row is never deleted: `token` is the last fencing token handed out for the
-- resource and must only grow, so releasing or expiring a lease clears `owner` and keeps the row.
CREATE TABLE "leases" (
    "resource" TEXT NOT NULL,
    "owner" TEXT,
    "token" BIGINT NOT NULL,
    "acquired_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3),
    CONSTRAINT "leases_pkey" PRIMARY KEY ("resource")
);
-- Live (or not yet swept) leases, for the sweeper and the live list.
CREATE INDEX "leases_held_idx" ON "leases" ("expires_at") WHERE "owner" IS NOT NULL;

-- What happened to leases, on either backend. For `denied`, `owner` is who asked and `holder` who held it.
CREATE TABLE "lease_events" (
    "id" BIGSERIAL NOT NULL,
    "resource" TEXT NOT NULL,
    "backend" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "owner" TEXT,
    "holder" TEXT,
    "token" BIGINT,
    "expires_at" TIMESTAMPTZ(3),
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT "lease_events_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "lease_events_event_check" CHECK ("event" IN ('acquired', 'denied', 'refreshed', 'released', 'expired')),
    CONSTRAINT "lease_events_backend_check" CHECK ("backend" IN ('postgres', 'redis'))
);
CREATE INDEX "lease_events_resource_idx" ON "lease_events" ("resource", "id");
CREATE INDEX "lease_events_at_idx" ON "lease_events" ("at");

-- The highest fencing token a protected write has accepted, per resource (whichever backend issued it).
CREATE TABLE "lease_fences" (
    "resource" TEXT NOT NULL,
    "token" BIGINT NOT NULL,
    "accepted_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    CONSTRAINT "lease_fences_pkey" PRIMARY KEY ("resource")
);

-- Keys seen recently (the Postgres dedup store): a key is "first" again once it has expired.
CREATE TABLE "dedup_keys" (
    "key" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "dedup_keys_pkey" PRIMARY KEY ("key")
);
CREATE INDEX "dedup_keys_expires_at_idx" ON "dedup_keys" ("expires_at");

-- The fencing rule, written once: a write carrying `token` for `resource` is accepted when no higher token for that
-- resource has been seen before, and the token becomes the new high-water mark. A grant is "seen" too (both
-- backends advance the mark when they hand out a token), so a holder that paused past its TTL is refused even
-- when its late write arrives before its successor's first one. The upsert locks the resource's
-- fence row until the caller's transaction ends, so two writers are ordered: a lower token that arrives while a
-- higher one is being written waits, then is refused. Equal tokens are accepted (the holder writes more than once).
CREATE FUNCTION "bridge_fence_accept"(p_resource text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  accepted boolean;
BEGIN
  INSERT INTO "lease_fences" AS f ("resource", "token") VALUES (p_resource, p_token)
  ON CONFLICT ("resource") DO UPDATE SET "token" = EXCLUDED."token", "accepted_at" = now()
  WHERE f."token" <= EXCLUDED."token"
  RETURNING true INTO accepted;
  RETURN coalesce(accepted, false);
END $$;

-- For use inside the statement that applies a protected write (`… WHERE … AND bridge_fence_check($resource, $token)`):
-- true when there is no fencing (null resource) or the token is accepted; otherwise it raises SQLSTATE BF409, which
-- aborts the statement (and its transaction), so a refused write changes nothing. lib/leases/fencing.ts maps the
-- SQLSTATE to FencingTokenStaleError. Costed high so the planner evaluates it after the write's cheaper conditions.
CREATE FUNCTION "bridge_fence_check"(p_resource text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE COST 1000 AS $$
BEGIN
  IF p_resource IS NULL THEN
    RETURN true;
  END IF;
  IF "bridge_fence_accept"(p_resource, p_token) THEN
    RETURN true;
  END IF;
  RAISE EXCEPTION 'fencing token % for resource % is stale: a higher token was accepted', p_token, p_resource
    USING ERRCODE = 'BF409';
END $$;

-- Acquires a lease in one call: never waits for the lease, only for the resource's row lock while another call on
-- the same resource finishes. Expiry is judged by this server's clock (clock_timestamp(), not the transaction's
-- start). Events are written under the same row lock, so their ids are in the real order of what happened to the
-- resource. A lease found expired is recorded as `expired` before the new grant (the lazy half of expiry; the
-- sweeper is the other).
CREATE FUNCTION "bridge_lease_acquire"(p_resource text, p_owner text, p_ttl_ms integer)
RETURNS TABLE (acquired boolean, token bigint, owner text, expires_at timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  cur "leases"%ROWTYPE;
  t timestamptz;
  expiry timestamptz;
  next_token bigint;
  ttl interval := make_interval(secs => p_ttl_ms / 1000.0);
BEGIN
  -- A live holder seen without the row lock is a valid refusal at this instant; it keeps the many refusals a hot
  -- resource gets from queueing on the row lock in front of the holder's own release.
  SELECT * INTO cur FROM "leases" l WHERE l."resource" = p_resource;
  t := clock_timestamp();
  IF FOUND AND cur."owner" IS NOT NULL AND cur."expires_at" > t THEN
    INSERT INTO "lease_events" ("resource", "backend", "event", "owner", "holder", "token", "expires_at")
    VALUES (p_resource, 'postgres', 'denied', p_owner, cur."owner", cur."token", cur."expires_at");
    RETURN QUERY SELECT false, NULL::bigint, cur."owner", cur."expires_at";
    RETURN;
  END IF;
  LOOP
    SELECT * INTO cur FROM "leases" l WHERE l."resource" = p_resource FOR UPDATE;
    t := clock_timestamp();
    -- At the precision it is stored with, so the caller is told exactly what the row says.
    expiry := (t + ttl)::timestamptz(3);
    EXIT WHEN FOUND;
    -- A first grant starts above any token a fenced write has seen (from the other backend, say).
    next_token := coalesce((SELECT f."token" FROM "lease_fences" f WHERE f."resource" = p_resource), 0) + 1;
    INSERT INTO "leases" ("resource", "owner", "token", "acquired_at", "expires_at")
    VALUES (p_resource, p_owner, next_token, t, expiry)
    ON CONFLICT ("resource") DO NOTHING;
    IF FOUND THEN
      PERFORM "bridge_fence_accept"(p_resource, next_token);
      INSERT INTO "lease_events" ("resource", "backend", "event", "owner", "token", "expires_at")
      VALUES (p_resource, 'postgres', 'acquired', p_owner, next_token, expiry);
      RETURN QUERY SELECT true, next_token, p_owner, expiry;
      RETURN;
    END IF;
    -- Another call created the row meanwhile: go round and lock it.
  END LOOP;

  IF cur."owner" IS NOT NULL AND cur."expires_at" > t THEN
    INSERT INTO "lease_events" ("resource", "backend", "event", "owner", "holder", "token", "expires_at")
    VALUES (p_resource, 'postgres', 'denied', p_owner, cur."owner", cur."token", cur."expires_at");
    RETURN QUERY SELECT false, NULL::bigint, cur."owner", cur."expires_at";
    RETURN;
  END IF;
  IF cur."owner" IS NOT NULL THEN
    INSERT INTO "lease_events" ("resource", "backend", "event", "owner", "token", "expires_at")
    VALUES (p_resource, 'postgres', 'expired', cur."owner", cur."token", cur."expires_at");
  END IF;
  next_token := greatest(cur."token", coalesce((SELECT f."token" FROM "lease_fences" f WHERE f."resource" = p_resource), 0)) + 1;
  UPDATE "leases" l SET "owner" = p_owner, "token" = next_token, "acquired_at" = t, "expires_at" = expiry
  WHERE l."resource" = p_resource;
  -- The grant advances the fence: from now on a write by any earlier holder is refused, even one that arrives
  -- before this holder's first write (which has read what the earlier holder committed, and nothing later).
  PERFORM "bridge_fence_accept"(p_resource, next_token);
  INSERT INTO "lease_events" ("resource", "backend", "event", "owner", "token", "expires_at")
  VALUES (p_resource, 'postgres', 'acquired', p_owner, next_token, expiry);
  RETURN QUERY SELECT true, next_token, p_owner, expiry;
END $$;
