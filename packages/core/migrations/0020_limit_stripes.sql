-- Stripes (docs/flow-control.md, "How a large concurrency limit is kept"): a limit of concurrency
-- alone with a large bound keeps its slots in two stripes instead of a list of leases on its
-- row, so that two workers' claims of it run side by side instead of taking turns on the row,
-- and no claim reads or rewrites a list that grows with the leases (issue 32). Additive: every
-- limit keeps its list until a worker that declares it starts (limitStripesReconcile) while no
-- worker of an earlier version is alive (task_worker.claims_stripes, below).
--
-- flow_slot: the stripe whose slot the task holds while it is processing under such a limit; set
-- by the claim that takes it, kept by a claim that takes over its expired lease. A stripe's slots
-- in use are counted from the rows themselves (task_flow_held), so every way out of processing
-- frees its slot, and nothing else has to be written when a task ends.
ALTER TABLE :SCHEMA.task ADD COLUMN flow_slot smallint;

-- Built with a plain CREATE INDEX inside the migration's transaction, which blocks writes to the
-- task table while it reads the table (docs/operations.md, "Upgrading to migration 20"): on a
-- big table build it beforehand with CONCURRENTLY under this name, and this finds it.
CREATE INDEX IF NOT EXISTS task_flow_held ON :SCHEMA.task (flow, flow_slot) WHERE status = 'processing' AND flow IS NOT NULL;

-- stripes: how many stripes the limit's slots are kept in; 0 for the list (holder_ids …)
ALTER TABLE :SCHEMA.task_limit ADD COLUMN stripes smallint NOT NULL DEFAULT 0;

-- One row per stripe. A claim locks one or two (FOR UPDATE SKIP LOCKED), counts their
-- processing rows as its snapshot shows them, and takes at most capacity less that. A claim that
-- takes rows writes the stripe's row again, with how many it took (taken) and the version it
-- replaced (prior: its xmin). A claim whose snapshot is older than that write sees the row it
-- locked differ from the row it reads: its count misses the rows that write took. One write
-- behind (prior is the version it read), it adds taken; further behind, it takes nothing from
-- that stripe and claims again.
CREATE TABLE :SCHEMA.task_limit_stripe (
  name text NOT NULL,
  stripe smallint NOT NULL CHECK (stripe >= 0),
  capacity integer NOT NULL CHECK (capacity >= 0),
  claims bigint NOT NULL DEFAULT 0,
  taken integer NOT NULL DEFAULT 0,
  prior xid,
  PRIMARY KEY (name, stripe)
);

-- whoever may write the task table may write the stripes (as the worker list, migration 11)
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT DISTINCT grantee, privilege_type FROM information_schema.role_table_grants
           WHERE table_schema = replace(':SCHEMA', '"', '') AND table_name = 'task'
             AND privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE') AND grantee <> current_user
  LOOP
    EXECUTE format('GRANT %s ON :SCHEMA.task_limit_stripe TO %s', g.privilege_type,
                   CASE g.grantee WHEN 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g.grantee) END);
  END LOOP;
END
$$;

-- claims_stripes: the worker claims striped limits as stripes. A worker of an earlier version
-- (its row keeps false) reads a striped limit's empty list as room for the whole bound, so no
-- limit is put in stripes while one is alive, and its rows are counted by a worker that knows.
ALTER TABLE :SCHEMA.task_worker ADD COLUMN claims_stripes boolean NOT NULL DEFAULT false;
