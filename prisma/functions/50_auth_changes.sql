-- Every console instance keeps the API tokens and sessions it verified in a short-lived cache
-- (lib/auth/token-cache.ts). Any change that can end or narrow a credential's power — a revoke, an expiry change, a
-- deleted (or truncated) token; a session signed out, rotated, pruned or made to expire sooner; a user disabled,
-- deleted, given other roles or told to change their password — notifies 'bridge_auth' at commit, whoever made it
-- (the console or someone's psql), and every instance's live listener drops its cache on it. Touching a token's
-- last use or a session's sliding expiry, the commonest writes here, notifies nobody. These writes are rare: the
-- notify's commit-time lock costs nothing that matters.
CREATE OR REPLACE FUNCTION "bridge_auth_changed"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('DELETE', 'TRUNCATE') THEN
    PERFORM pg_notify('bridge_auth', '');
  ELSIF TG_TABLE_NAME = 'sessions' THEN
    IF NEW."expires_at" < OLD."expires_at" OR NEW."absolute_expires_at" < OLD."absolute_expires_at" OR (OLD."id", OLD."user_id") IS DISTINCT FROM (NEW."id", NEW."user_id") THEN
      PERFORM pg_notify('bridge_auth', '');
    END IF;
  ELSIF TG_TABLE_NAME = 'api_tokens' THEN
    IF (OLD."revoked_at", OLD."expires_at", OLD."user_id", OLD."token_hash") IS DISTINCT FROM (NEW."revoked_at", NEW."expires_at", NEW."user_id", NEW."token_hash") THEN
      PERFORM pg_notify('bridge_auth', '');
    END IF;
  ELSIF (OLD."roles", OLD."disabled", OLD."must_change_password", OLD."username") IS DISTINCT FROM (NEW."roles", NEW."disabled", NEW."must_change_password", NEW."username") THEN
    PERFORM pg_notify('bridge_auth', '');
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS "api_tokens_auth_changed" ON "api_tokens";
CREATE TRIGGER "api_tokens_auth_changed" AFTER UPDATE OR DELETE ON "api_tokens"
  FOR EACH ROW EXECUTE FUNCTION "bridge_auth_changed"();
DROP TRIGGER IF EXISTS "users_auth_changed" ON "users";
CREATE TRIGGER "users_auth_changed" AFTER UPDATE OR DELETE ON "users"
  FOR EACH ROW EXECUTE FUNCTION "bridge_auth_changed"();
DROP TRIGGER IF EXISTS "api_tokens_auth_truncated" ON "api_tokens";
CREATE TRIGGER "api_tokens_auth_truncated" AFTER TRUNCATE ON "api_tokens"
  FOR EACH STATEMENT EXECUTE FUNCTION "bridge_auth_changed"();
DROP TRIGGER IF EXISTS "users_auth_truncated" ON "users";
CREATE TRIGGER "users_auth_truncated" AFTER TRUNCATE ON "users"
  FOR EACH STATEMENT EXECUTE FUNCTION "bridge_auth_changed"();
DROP TRIGGER IF EXISTS "sessions_auth_changed" ON "sessions";
CREATE TRIGGER "sessions_auth_changed" AFTER UPDATE OR DELETE ON "sessions"
  FOR EACH ROW EXECUTE FUNCTION "bridge_auth_changed"();
DROP TRIGGER IF EXISTS "sessions_auth_truncated" ON "sessions";
CREATE TRIGGER "sessions_auth_truncated" AFTER TRUNCATE ON "sessions"
  FOR EACH STATEMENT EXECUTE FUNCTION "bridge_auth_changed"();
