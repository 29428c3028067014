-- A worker's claim fence (`worker-claim:<intent id>`) now holds its token only while the claim runs: every statement
-- that ends a claim (its close, a settle, a suspension for a wait, the rescue) removes the fence in the same
-- statement, and a fence that holds nothing refuses every token. A worker whose claim was rescued while it still ran
-- has its late writes refused from the rescue on; before, they were accepted until the next claim of the intent
-- granted a higher token (docs/LEASES.md, "Workers' runs are fenced by their claim"). The fences of claims that
-- ended before this change go too, so the table holds a row per claim in flight rather than one per intent ever run.
DELETE FROM "lease_fences" f
WHERE starts_with(f."resource", 'worker-claim:')
  AND NOT EXISTS (
    SELECT 1 FROM "intent_work" w
    WHERE w."state" = 'running' AND w."claim_token" = f."token" AND 'worker-claim:' || w."intent_id"::text = f."resource"
  );
