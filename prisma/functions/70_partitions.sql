-- Range partitions of the history tables by time (docs/SCALE.md, "Partitioned history").
--
-- Each partitioned table has one partition per period, a calendar month or a day (UTC), named <table>_pYYYY_MM or
-- <table>_pYYYY_MM_DD, and after the last one a catch-all, <table>_future, FROM (the period after) TO (MAXVALUE): a
-- write never fails because housekeeping was late. It is a range partition rather than a DEFAULT one on purpose: with
-- only ranges, the planner knows the partitions' order and reads a newest-first page (the Audit page) from the newest
-- partition back, stopping when the page is full; a DEFAULT partition could hold any time, so every partition would
-- be opened and merged.
-- A table's period is the one its migration chose (a month for a table kept for months or forever, a day for one kept
-- for days, so retiring whole partitions keeps at most a day more than asked), and these functions read it from the
-- table's own partitions: nothing else records it, so it cannot disagree with them.
-- Housekeeping (lib/db/partitions.ts) calls bridge_partitions_maintain for each table: it creates the periods ahead
-- (moving any rows the catch-all took into their periods) and detaches, and drops unless asked to keep them for
-- archiving, the partitions whose every row is older than the table's retention. A write older than the oldest
-- partition has no home and is refused (23514): the product writes at now(); seeds of old history cover their
-- periods first (bridge_partitions_cover).
--
-- Period arithmetic is done on UTC wall-clock time: a timestamptz plus '1 month' would follow the session's time zone.

-- Their parameters were renamed when tables partitioned by day came (a parameter's name cannot change in place).
DROP FUNCTION IF EXISTS "bridge_partition_create"(regclass, timestamptz);
DROP FUNCTION IF EXISTS "bridge_partitions_maintain"(regclass, timestamptz, int, int, boolean);

-- The start of the period (`day` or `month`, UTC) `t` falls in, `later` periods on.
CREATE OR REPLACE FUNCTION "bridge_period_start"(t timestamptz, period text, later int DEFAULT 0) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$
  SELECT (date_trunc(period, t AT TIME ZONE 'UTC')
          + CASE period WHEN 'month' THEN make_interval(months => later) ELSE make_interval(days => later) END) AT TIME ZONE 'UTC'
$$;

CREATE OR REPLACE FUNCTION "bridge_month_start"(t timestamptz, months_later int DEFAULT 0) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$
  SELECT "bridge_period_start"(t, 'month', months_later)
$$;

-- The partitions of a table with their ranges, read from the catalog (so partitions made by hand count too), oldest
-- first; the catch-all's range has no end (to_at NULL).
CREATE OR REPLACE FUNCTION "bridge_partitions"(parent regclass)
RETURNS TABLE ("partition" regclass, "from_at" timestamptz, "to_at" timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT c.oid::regclass,
         (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1]::timestamptz,
         (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  WHERE i.inhparent = parent
  ORDER BY 3 NULLS LAST
$$;

-- A table's period: `day` when its newest bounded partition spans a day at most, else `month`.
CREATE OR REPLACE FUNCTION "bridge_partition_period"(parent regclass) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p.to_at - p.from_at <= interval '1 day' THEN 'day' ELSE 'month' END
  FROM "bridge_partitions"(parent) p WHERE p.to_at IS NOT NULL AND p.from_at IS NOT NULL
  ORDER BY p.to_at DESC LIMIT 1
$$;

-- The column a table is partitioned by.
CREATE OR REPLACE FUNCTION "bridge_partition_key"(parent regclass) RETURNS name
LANGUAGE sql STABLE AS $$
  SELECT a.attname FROM pg_partitioned_table p
  JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
  WHERE p.partrelid = parent
$$;

-- The table's columns, as a list for INSERT … SELECT between its partitions.
CREATE OR REPLACE FUNCTION "bridge_partition_columns"(parent regclass) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)
  FROM pg_attribute a WHERE a.attrelid = parent AND a.attnum > 0 AND NOT a.attisdropped
$$;

-- The partitioned tables whose foreign keys reference `parent` (the lock history's samples and intents reference its
-- episodes). They are partitioned on the same time as their parent row, in the same periods.
CREATE OR REPLACE FUNCTION "bridge_partition_referencing"(parent regclass) RETURNS SETOF regclass
LANGUAGE sql STABLE AS $$
  SELECT DISTINCT k.conrelid::regclass FROM pg_constraint k JOIN pg_partitioned_table t ON t.partrelid = k.conrelid
  WHERE k.contype = 'f' AND k.confrelid = parent AND k.conparentid = 0 AND k.conrelid <> parent
$$;

-- Creates the partition of `parent` for the period `at` falls in and answers its name, unless a partition of its
-- own already covers any of that period (then NULL). A period the catch-all covers is carved out of it: the catch-all
-- is detached, the period and a new catch-all from the period after are created, the old catch-all's rows are copied
-- into them and it is dropped. A detached partition loses the row triggers it inherited, and the copies are inserted
-- into the partitions themselves, so the parent's statement triggers (the outbox) do not see them again.
-- A period after the catch-all's start can only be carved with every period before it (no gap may open): call
-- bridge_partitions_cover for a range.
CREATE OR REPLACE FUNCTION "bridge_partition_create"(parent regclass, at timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  period text := "bridge_partition_period"(parent);
  lo timestamptz;
  hi timestamptz;
  nsp name;
  rel name;
  child text;
  key name := "bridge_partition_key"(parent);
  future record;
  cols text := "bridge_partition_columns"(parent);
BEGIN
  IF key IS NULL OR period IS NULL THEN
    RAISE EXCEPTION '% is not a table partitioned by day or month', parent USING ERRCODE = 'wrong_object_type';
  END IF;
  lo := "bridge_period_start"(at, period);
  hi := "bridge_period_start"(at, period, 1);
  IF EXISTS (SELECT 1 FROM "bridge_partitions"(parent) p WHERE p.to_at IS NOT NULL AND coalesce(p.from_at, '-infinity') < hi AND p.to_at > lo) THEN
    RETURN NULL;
  END IF;
  SELECT n.nspname, c.relname INTO nsp, rel FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = parent;
  child := format('%I.%I', nsp, rel || '_p' || to_char(lo AT TIME ZONE 'UTC', CASE period WHEN 'month' THEN 'YYYY_MM' ELSE 'YYYY_MM_DD' END));
  SELECT p.partition, p.from_at INTO future FROM "bridge_partitions"(parent) p WHERE p.to_at IS NULL AND p.from_at IS NOT NULL;
  IF future.partition IS NULL OR hi <= future.from_at THEN
    EXECUTE format('CREATE TABLE %s PARTITION OF %s FOR VALUES FROM (%L) TO (%L)', child, parent, lo, hi);
    RETURN child::regclass::text;
  END IF;
  IF lo <> future.from_at THEN
    RAISE EXCEPTION 'the % of % is not the first of %''s catch-all partition (%)', period, at, parent, future.from_at
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  EXECUTE format('ALTER TABLE %s DETACH PARTITION %s', parent, future.partition);
  EXECUTE format('ALTER TABLE %s RENAME TO %I', future.partition, rel || '_future_carved');
  EXECUTE format('CREATE TABLE %s PARTITION OF %s FOR VALUES FROM (%L) TO (%L)', child, parent, lo, hi);
  EXECUTE format('CREATE TABLE %I.%I PARTITION OF %s FOR VALUES FROM (%L) TO (MAXVALUE)', nsp, rel || '_future', parent, hi);
  EXECUTE format('INSERT INTO %s (%s) SELECT %s FROM %I.%I WHERE %I < $1', child, cols, cols, nsp, rel || '_future_carved', key) USING hi;
  EXECUTE format('INSERT INTO %I.%I (%s) SELECT %s FROM %I.%I WHERE %I >= $1', nsp, rel || '_future', cols, cols, nsp, rel || '_future_carved', key) USING hi;
  EXECUTE format('DROP TABLE %I.%I', nsp, rel || '_future_carved');
  RETURN child::regclass::text;
END $$;

-- Creates the partitions `parent` lacks from the period of `from_at` to the period of `to_at`, both included. A
-- range reaching into the catch-all starts at the catch-all's first period, so no gap opens before it. The tables
-- referencing `parent` get the same periods first: a row of theirs always has its partition when its parent row has.
CREATE OR REPLACE FUNCTION "bridge_partitions_cover"(parent regclass, from_at timestamptz, to_at timestamptz) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  period text := "bridge_partition_period"(parent);
  m timestamptz := "bridge_period_start"(from_at, period);
  future_from timestamptz;
  made text;
  child regclass;
  created text[] := '{}';
BEGIN
  FOR child IN SELECT * FROM "bridge_partition_referencing"(parent) LOOP
    created := created || "bridge_partitions_cover"(child, from_at, to_at);
  END LOOP;
  SELECT p.from_at INTO future_from FROM "bridge_partitions"(parent) p WHERE p.to_at IS NULL AND p.from_at IS NOT NULL;
  IF future_from < m AND future_from <= to_at THEN
    m := future_from;
  END IF;
  WHILE m <= to_at LOOP
    made := "bridge_partition_create"(parent, m);
    IF made IS NOT NULL THEN created := created || made; END IF;
    m := "bridge_period_start"(m, period, 1);
  END LOOP;
  RETURN created;
END $$;

-- Detaches the partitions of `parent` whose every row is older than `keep_days` at `now` (their upper bound is at or
-- before now - keep_days), oldest first, and drops them unless `detach_only` (then they stay as tables of their own,
-- for archiving: dump them, then drop them). The catch-all is never retired.
-- The partitioned tables that reference `parent` retire their expired partitions first: theirs hold the rows that
-- reference the rows of the parent's, and a partition still referenced cannot be detached. A partition of theirs
-- kept as a table (detach only) drops its foreign key: it would otherwise keep pointing into the parent, and the
-- parent's partition could not be detached either.
CREATE OR REPLACE FUNCTION "bridge_partitions_retire"(parent regclass, now timestamptz, keep_days int, detach_only boolean) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  cutoff timestamptz := ((now AT TIME ZONE 'UTC') - make_interval(days => keep_days)) AT TIME ZONE 'UTC';
  p record;
  fk record;
  child regclass;
  retired text[] := '{}';
BEGIN
  FOR child IN SELECT * FROM "bridge_partition_referencing"(parent) LOOP
    retired := retired || "bridge_partitions_retire"(child, now, keep_days, detach_only);
  END LOOP;
  FOR p IN SELECT * FROM "bridge_partitions"(parent) x WHERE x.to_at <= cutoff ORDER BY x.to_at LOOP
    EXECUTE format('ALTER TABLE %s DETACH PARTITION %s', parent, p.partition);
    retired := retired || p.partition::text;
    IF NOT detach_only THEN
      EXECUTE format('DROP TABLE %s', p.partition);
    ELSE
      FOR fk IN SELECT conname FROM pg_constraint WHERE conrelid = p.partition AND contype = 'f' AND conparentid = 0 LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', p.partition, fk.conname);
      END LOOP;
    END IF;
  END LOOP;
  RETURN retired;
END $$;

-- One round of housekeeping for one table, at `now` (tests pass another time instead of waiting for it): the periods
-- from now's to `ahead` periods later exist, every row the catch-all took is moved into its period, and, when
-- `keep_days` is set, expired partitions are retired (with those of the tables referencing it, see above). One
-- instance at a time: a transaction-level advisory lock (usable behind PgBouncer), which the others skip instead of
-- waiting for (`ran` false). The DDL waits for the engine's writes on the table for at most a second, then gives up
-- until the next round, rather than holding every later write in the lock queue behind it.
CREATE OR REPLACE FUNCTION "bridge_partitions_maintain"(parent regclass, now timestamptz, ahead int, keep_days int, detach_only boolean)
RETURNS TABLE ("ran" boolean, "created" text[], "retired" text[])
LANGUAGE plpgsql AS $$
DECLARE
  future regclass;
  newest timestamptz;
  done text[];
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('bridge_partitions'), parent::oid::int) THEN
    RETURN QUERY SELECT false, '{}'::text[], '{}'::text[];
    RETURN;
  END IF;
  PERFORM set_config('lock_timeout', '1s', true);
  done := "bridge_partitions_cover"(parent, now, "bridge_period_start"(now, "bridge_partition_period"(parent), ahead));
  SELECT p.partition INTO future FROM "bridge_partitions"(parent) p WHERE p.to_at IS NULL AND p.from_at IS NOT NULL;
  IF future IS NOT NULL THEN
    EXECUTE format('SELECT max(%I) FROM %s', "bridge_partition_key"(parent), future) INTO newest;
    IF newest IS NOT NULL THEN
      done := done || "bridge_partitions_cover"(parent, now, newest);
    END IF;
  END IF;
  RETURN QUERY SELECT true, done,
    CASE WHEN keep_days IS NULL OR keep_days <= 0 THEN '{}'::text[]
         ELSE "bridge_partitions_retire"(parent, now, keep_days, detach_only) END;
END $$;
