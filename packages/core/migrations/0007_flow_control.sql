-- Flow control (docs/flow-control.md): limits on how many tasks of a named limit run at once
-- (in all, and per key) and how many start per period, across every worker, enforced by the
-- claim. Stop workers and producers of older versions before applying this: they neither set
-- nor honour the columns below, and an older worker's claim would take limited rows unchecked.
--
-- flow:     the limit the task runs under (its task definition's `limit` when it was enqueued);
--           null for a task under no limit.
-- flow_key: the key its per-key limits count it under ('' when the limit has none).
-- Both nullable without a default: PostgreSQL only records the columns, it does not rewrite the
-- table.
ALTER TABLE :SCHEMA.task
  ADD COLUMN flow text,
  ADD COLUMN flow_key text;

-- Rows under a limit leave the unlimited claim's indexes for indexes of their own, keyed by their
-- limit and key: a claim reaches a limit's rows only while the limit has room, and a key's rows
-- only while that key has room, so rows over a limit are never walked (issue 11).
DROP INDEX :SCHEMA.task_claim;
DROP INDEX :SCHEMA.task_due;
CREATE INDEX task_claim ON :SCHEMA.task (priority DESC, id)
  WHERE status = 'pending' AND NOT blocked AND NOT scheduled AND flow IS NULL;
CREATE INDEX task_due ON :SCHEMA.task (available_at, id)
  WHERE status = 'pending' AND scheduled AND NOT blocked AND flow IS NULL;
-- per limit and key, best first: one probe finds a key's next row, whatever waits behind it
CREATE INDEX task_flow_ready ON :SCHEMA.task (flow, flow_key, priority DESC, id)
  WHERE status = 'pending' AND NOT blocked AND NOT scheduled AND flow IS NOT NULL;
-- a limit's rows that were scheduled for later, by due time: the claim moves the due ones into
-- task_flow_ready (scheduled = false), where they compete by priority
CREATE INDEX task_flow_due ON :SCHEMA.task (flow, available_at, id)
  WHERE status = 'pending' AND scheduled AND NOT blocked AND flow IS NOT NULL;

-- One row per limit that a worker's code declares (registered at every worker start; the values
-- of the latest start apply). Every claim that takes rows of a limit locks its row first, so the
-- claims of one limit take turns, and writes here which leases hold its slots and when its
-- latest starts were. Nothing else writes the bookkeeping: a fenced finalize frees a slot just by
-- moving its row out of 'processing' (the next claim sees the lease is over), and an expired
-- lease frees it by expiring.
CREATE TABLE :SCHEMA.task_limit (
  name text PRIMARY KEY,
  -- at most this many leases at once in all (null: no such limit)
  concurrency integer CHECK (concurrency > 0),
  -- at most this many at once per flow_key
  concurrency_per_key integer CHECK (concurrency_per_key > 0),
  -- at most rate starts in any rate_period_ms (a sliding window), in all and per key
  rate integer CHECK (rate > 0),
  rate_period_ms bigint CHECK (rate_period_ms > 0),
  rate_per_key integer CHECK (rate_per_key > 0),
  rate_per_key_period_ms bigint CHECK (rate_per_key_period_ms > 0),
  CHECK ((rate IS NULL) = (rate_period_ms IS NULL)),
  CHECK ((rate_per_key IS NULL) = (rate_per_key_period_ms IS NULL)),
  -- the leases holding a slot, as the claims that took them wrote them: task id, the lease_version
  -- of that claim, and the key (one entry per lease; at most the leases running at once)
  holder_ids bigint[] NOT NULL DEFAULT '{}',
  holder_versions bigint[] NOT NULL DEFAULT '{}',
  holder_keys text[] NOT NULL DEFAULT '{}',
  -- starts within the longest rate period: when (epoch ms, by the database's clock) and under which
  -- key (at most the starts a window allows)
  start_at float8[] NOT NULL DEFAULT '{}',
  start_keys text[] NOT NULL DEFAULT '{}',
  -- the rate's pace (GCRA): starts conform while the clock is within a tenth of the period of
  -- this theoretical arrival time (epoch ms), and each start moves it period / rate on
  rate_tat float8,
  -- the task names that declared this limit at the latest start, for people
  task_names text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  -- when a worker last declared it, and which: a limit removed from the code goes stale here
  seen_at timestamptz NOT NULL DEFAULT now(),
  seen_by text
);

-- A slot frees when a limited row leaves 'processing' (a fenced finalize, the reap, a release):
-- wake the workers that wait for one, with the insert trigger's function (core migration 5): it
-- notifies only while a worker may be asleep, and otherwise holds the table's wake lock shared
-- until commit, so a worker about to sleep claims once more after this commits. The WHEN clause
-- keeps the trigger from running at all for rows under no limit.
CREATE TRIGGER task_notify_slot_freed AFTER UPDATE OF status ON :SCHEMA.task
  FOR EACH ROW WHEN (OLD.flow IS NOT NULL AND OLD.status = 'processing' AND NEW.status <> 'processing')
  EXECUTE FUNCTION :SCHEMA.notify_inserted();
