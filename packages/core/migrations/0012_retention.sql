-- Retention by default (docs/operations.md, "Retention"): workers delete finished rows after an
-- age, in short batches, one worker at a time per table. Additive: workers of the previous
-- version keep running while this is applied (they never read or write what it adds).
--
-- One row per leased table of the schema ('task', 'outbox'): whose turn it is to delete that
-- table's old rows. A worker takes the turn with one statement, an upsert that succeeds only once
-- next_at has passed, and moves next_at on; every other worker's attempt until then changes
-- nothing. A database-side turn rather than a leader in one process's memory, and no session
-- state (advisory locks), so it works through a pooler in transaction mode. A worker that dies
-- during its turn leaves next_at in place: the next attempt after it takes the turn over.
CREATE TABLE :SCHEMA.retention (
  table_name text PRIMARY KEY,
  -- the next turn may start at this time (database clock)
  next_at timestamptz NOT NULL,
  -- the worker (lease owner) that took the latest turn, and when: for people
  taken_by text,
  taken_at timestamptz
);

-- Cancelled rows leave by age like done ones (cancelTask sets done_at): an index of their own,
-- oldest first, so a batch reads about as many entries as it deletes. Cancelled rows are few
-- next to done ones; the index costs nothing for rows of any other status.
CREATE INDEX task_cancelled_at ON :SCHEMA.task (done_at) WHERE status = 'cancelled';

-- Parked workflows (waiting), for the stats: with the claim's, the leases' and the dead rows'
-- partial indexes, every unfinished row sits in an index of its own, so the stats count them
-- without reading a finished row (task_waiting, of migration 8, holds only the ones with a wake
-- time). Its column never changes and its predicate's column is in other indexes' already, so
-- it costs updates nothing, and inserts and status changes one predicate check.
CREATE INDEX task_parked ON :SCHEMA.task (id) WHERE status = 'waiting';

-- whoever may update the task table (a worker) takes turns
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT DISTINCT grantee FROM information_schema.role_table_grants
           WHERE table_schema = replace(':SCHEMA', '"', '') AND table_name = 'task'
             AND privilege_type = 'UPDATE' AND grantee <> current_user
  LOOP
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON :SCHEMA.retention TO %s',
                   CASE g.grantee WHEN 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g.grantee) END);
  END LOOP;
END
$$;
