-- Hand-written: a fencing token is only as good as its grant, and a lease belongs to the caller that took it.
--
-- Until now a write carrying `fencing: { resource, token }` advanced the resource's fence to any token not lower than
-- its mark, so a token nobody was ever granted could move the fence past every real holder. From here on only grants
-- move a fence (both lease backends, and a worker's claim); a write is accepted only with the
-- token the fence holds, which is the resource's newest grant: lower ones were superseded, higher ones were never
-- handed out.

-- Who took the lease now held: the credential (`user:<id>` for a signed-in user, `token:<id>` for an API token) that
-- alone may refresh and release it, and that user's name, which the console shows beside the owner.
ALTER TABLE "leases" ADD COLUMN "holder_credential" TEXT, ADD COLUMN "holder_actor" TEXT;

-- Who acted, on every event (`owner` is the name the lease is held under, chosen by the caller): the signed-in user or
-- the API token's user; `system` for the sweeper and for code that holds leases of its own.
ALTER TABLE "lease_events" ADD COLUMN "actor" TEXT;

-- Fences moved by forged tokens go back to the newest grant known for their resource: a lease row's counter, the
-- tokens in the lease log, or (for a worker's claim fence) the claims of that intent. A fence with no grant behind it
-- at all is dropped; the next grant starts above every token still on record.
WITH granted AS (
  SELECT f."resource",
         CASE WHEN f."resource" LIKE 'worker-claim:%' THEN
           (SELECT greatest(max(r."claim_token"), (SELECT w."claim_token" FROM "intent_work" w WHERE w."intent_id"::text = substr(f."resource", 14)))
            FROM "pipeline_runs" r WHERE r."intent_id"::text = substr(f."resource", 14))
         ELSE
           greatest((SELECT l."token" FROM "leases" l WHERE l."resource" = f."resource"),
                    (SELECT max(e."token") FROM "lease_events" e WHERE e."resource" = f."resource" AND e."event" <> 'denied'))
         END AS "token"
  FROM "lease_fences" f
), lowered AS (
  UPDATE "lease_fences" f SET "token" = g."token", "accepted_at" = now()
  FROM granted g WHERE g."resource" = f."resource" AND g."token" IS NOT NULL AND f."token" > g."token"
)
DELETE FROM "lease_fences" f USING granted g WHERE g."resource" = f."resource" AND g."token" IS NULL;

-- A grant advances its resource's fence: true when `p_token` is above every earlier grant (and becomes the mark),
-- false when the fence already holds it or a higher one (a Redis counter restored from an old snapshot; the grant is
-- then given back). The update waits for writes that hold the fence row (bridge_fence_accept), so a grant is made
-- either before a write's check (which then refuses the older token) or after its transaction ended (and the new
-- holder reads what it wrote).
CREATE FUNCTION "bridge_fence_grant"(p_resource text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  granted boolean;
BEGIN
  INSERT INTO "lease_fences" AS f ("resource", "token") VALUES (p_resource, p_token)
  ON CONFLICT ("resource") DO UPDATE SET "token" = EXCLUDED."token", "accepted_at" = now()
  WHERE f."token" < EXCLUDED."token"
  RETURNING true INTO granted;
  RETURN coalesce(granted, false);
END $$;

-- The fencing rule for writes, written once: a write carrying `p_token` for `p_resource` is accepted only when the
-- fence holds exactly that token, the resource's newest grant. Anything else is refused and moves nothing: a lower
-- token was superseded by a later grant, a higher one (or any token of a resource never granted) was never handed
-- out. The fence row is held FOR SHARE until the writer's transaction ends: the holder's writes do not queue behind
-- each other, and a grant arriving meanwhile waits for them.
--
-- Workers' claim fences (`worker-claim:<intent id>`) follow the same rule: the claim statement grants each new claim
-- token to its fence (bridge_fence_grant, lib/workers/repository.ts), so an earlier claim's writes are refused from
-- the claim's commit on.
CREATE OR REPLACE FUNCTION "bridge_fence_accept"(p_resource text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM 1 FROM "lease_fences" f WHERE f."resource" = p_resource AND f."token" = p_token FOR SHARE;
  RETURN FOUND;
END $$;

-- The lease's acquire, now with who asks: the credential that will hold it and the acting user's name. Otherwise as
-- before (migration 20261124110000_leases), except that the grant advances the fence with bridge_fence_grant.
DROP FUNCTION "bridge_lease_acquire"(text, text, integer);
CREATE FUNCTION "bridge_lease_acquire"(p_resource text, p_owner text, p_ttl_ms integer, p_credential text, p_actor text)
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
    INSERT INTO "lease_events" ("resource", "backend", "event", "owner", "holder", "token", "expires_at", "actor")
    VALUES (p_resource, 'postgres', 'denied', p_owner, cur."owner", cur."token", cur."expires_at", p_actor);
    RETURN QUERY SELECT false, NULL::bigint, cur."owner", cur."expires_at";
    RETURN;
  END IF;
  LOOP
    SELECT * INTO cur FROM "leases" l WHERE l."resource" = p_resource FOR UPDATE;
    t := clock_timestamp();
    -- At the precision it is stored with, so the caller is told exactly what the row says.
    expiry := (t + ttl)::timestamptz(3);
    EXIT WHEN FOUND;
    -- A first grant starts above any token granted before (by the other backend, say).
    next_token := coalesce((SELECT f."token" FROM "lease_fences" f WHERE f."resource" = p_resource), 0) + 1;
    INSERT INTO "leases" ("resource", "owner", "token", "acquired_at", "expires_at", "holder_credential", "holder_actor")
    VALUES (p_resource, p_owner, next_token, t, expiry, p_credential, p_actor)
    ON CONFLICT ("resource") DO NOTHING;
    IF FOUND THEN
      PERFORM "bridge_fence_grant"(p_resource, next_token);
      INSERT INTO "lease_events" ("resource", "backend", "event", "owner", "token", "expires_at", "actor")
      VALUES (p_resource, 'postgres', 'acquired', p_owner, next_token, expiry, p_actor);
      RETURN QUERY SELECT true, next_token, p_owner, expiry;
      RETURN;
    END IF;
    -- Another call created the row meanwhile: go round and lock it.
  END LOOP;

  IF cur."owner" IS NOT NULL AND cur."expires_at" > t THEN
    INSERT INTO "lease_events" ("resource", "backend", "event", "owner", "holder", "token", "expires_at", "actor")
    VALUES (p_resource, 'postgres', 'denied', p_owner, cur."owner", cur."token", cur."expires_at", p_actor);
    RETURN QUERY SELECT false, NULL::bigint, cur."owner", cur."expires_at";
    RETURN;
  END IF;
  IF cur."owner" IS NOT NULL THEN
    -- Nobody acted: the lease ran out; this acquire is only where it was noticed.
    INSERT INTO "lease_events" ("resource", "backend", "event", "owner", "token", "expires_at", "actor")
    VALUES (p_resource, 'postgres', 'expired', cur."owner", cur."token", cur."expires_at", 'system');
  END IF;
  next_token := greatest(cur."token", coalesce((SELECT f."token" FROM "lease_fences" f WHERE f."resource" = p_resource), 0)) + 1;
  UPDATE "leases" l SET "owner" = p_owner, "token" = next_token, "acquired_at" = t, "expires_at" = expiry,
                        "holder_credential" = p_credential, "holder_actor" = p_actor
  WHERE l."resource" = p_resource;
  -- The grant advances the fence: from now on a write by any earlier holder is refused, even one that arrives
  -- before this holder's first write (which has read what the earlier holder committed, and nothing later).
  PERFORM "bridge_fence_grant"(p_resource, next_token);
  INSERT INTO "lease_events" ("resource", "backend", "event", "owner", "token", "expires_at", "actor")
  VALUES (p_resource, 'postgres', 'acquired', p_owner, next_token, expiry, p_actor);
  RETURN QUERY SELECT true, next_token, p_owner, expiry;
END $$;

-- Lease events to the outbox, as before (migration 20261125090000_lock_and_pipeline_events), with two changes: the
-- envelope's `version` carries the token as the 64-bit number it is (it was cast to integer, which failed, and with
-- it the lease call, once a token passed 2^31 - 1), and `actor` is who acted rather than the lease's owner name.
CREATE OR REPLACE FUNCTION "bridge_outbox_from_lease_events"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "outbox_events" ("subject", "ordering_key", "partition", "payload")
  SELECT 'evt.lock.' || e."event", e."resource", "bridge_outbox_partition"(e."resource"),
         "bridge_outbox_payload"('evt.lock.' || e."event", coalesce(e."actor", e."owner"),
           CASE e."event"
             WHEN 'acquired' THEN jsonb_build_object('resourceId', e."resource", 'ownerId', e."owner",
                                                     'expiresAt', "bridge_iso_utc"(e."expires_at"), 'fencingToken', e."token",
                                                     'backend', e."backend")
             WHEN 'denied' THEN jsonb_build_object('resourceId', e."resource", 'requestedBy', e."owner",
                                                   'currentOwner', e."holder", 'reason', 'held',
                                                   'heldUntil', "bridge_iso_utc"(e."expires_at"), 'backend', e."backend")
             ELSE jsonb_build_object('resourceId', e."resource", 'ownerId', e."owner", 'fencingToken', e."token",
                                     'backend', e."backend")
           END,
           NULL, NULL, e."at")
         || jsonb_build_object('version', CASE WHEN e."event" = 'denied' THEN NULL ELSE e."token" END)
  FROM inserted e
  WHERE e."event" IN ('acquired', 'denied', 'released', 'expired')
  ORDER BY e."id";
  RETURN NULL;
END $$;

-- As before, with the refusal worded for both ways a token can fail the rule.
CREATE OR REPLACE FUNCTION "bridge_fence_check"(p_resource text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE COST 1000 AS $$
BEGIN
  IF p_resource IS NULL THEN
    RETURN true;
  END IF;
  IF "bridge_fence_accept"(p_resource, p_token) THEN
    RETURN true;
  END IF;
  RAISE EXCEPTION 'fencing token % for resource % is not its current grant: superseded or never granted', p_token, p_resource
    USING ERRCODE = 'BF409';
END $$;
