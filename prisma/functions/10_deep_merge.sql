-- The deep merge of a correction, done where the payload lives: objects merge key by key, anything else (arrays,
-- scalars, null) replaces; a null sets the key to null, it does not delete it. The console's preview
-- (lib/shared/json.ts deepMerge) is checked against this one on generated payloads (test/engine/merge.test.ts).
CREATE OR REPLACE FUNCTION "bridge_jsonb_deep_merge"(target jsonb, diff jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  merged jsonb := target;
  k text;
  v jsonb;
BEGIN
  FOR k, v IN SELECT e.key, e.value FROM jsonb_each(diff) e LOOP
    IF jsonb_typeof(v) = 'object' AND jsonb_typeof(merged -> k) = 'object' THEN
      merged := merged || jsonb_build_object(k, "bridge_jsonb_deep_merge"(merged -> k, v));
    ELSE
      merged := merged || jsonb_build_object(k, v);
    END IF;
  END LOOP;
  RETURN merged;
END $$;
